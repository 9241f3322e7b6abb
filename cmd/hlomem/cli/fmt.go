package cli

// fmtFlags defines the flags of hlomem fmt on fs and returns its run func.
func fmtFlags(fs *flagSet, e *env) func(args []string) error {
	verify := fs.Bool("verify", true, "check each module with hlo.Verify before printing")
	return func(args []string) error {
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
}
