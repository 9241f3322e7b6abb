package cli

func init() {
	register(&command{
		name:    "fmt",
		usage:   "[--verify=false] FILE.hlo",
		summary: "print every module in FILE in canonical HLO text (modules separated by // -----)",
		run:     runFmt,
	})
}

func runFmt(e *env, args []string) error {
	c := commands["fmt"]
	fs := newFlagSet(c, e)
	verify := fs.Bool("verify", true, "check each module with hlo.Verify before printing")
	file, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	mods, err := loadModules(e, file, *verify)
	if err != nil {
		return err
	}
	for i, m := range mods {
		if i > 0 {
			e.stdout.WriteString("\n// -----\n\n")
		}
		e.stdout.WriteString(m.String())
	}
	return nil
}
