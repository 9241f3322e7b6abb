package cli

import "github.com/hlomem/hlomem/hlo"

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
	mods, err := loadModules(file, *verify)
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

// loadModules parses every module of file and, if verify is set, verifies
// each; errors carry FILE:LINE:COL positions.
func loadModules(file string, verify bool) ([]*hlo.Module, error) {
	mods, err := hlo.ParseFile(file)
	if err != nil {
		return nil, err
	}
	if verify {
		var all hlo.ErrorList
		for _, m := range mods {
			if err := hlo.Verify(m); err != nil {
				all = append(all, err.(hlo.ErrorList)...)
			}
		}
		if err := all.Err(); err != nil {
			return nil, err
		}
	}
	return mods, nil
}
