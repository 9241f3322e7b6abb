package cli

import (
	"os"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/golden"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"hlomem": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the txtar scripts in testdata/script. Scripts see the
// corpus directory as $CORPUS; the condition [corpus] is true when it exists.
// HLOMEM_UPDATE=1 (or -update) rewrites their cmp files, as it rewrites the
// golden files (golden.Updating).
func TestScripts(t *testing.T) {
	dir := corpus.Dir()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("CORPUS", dir)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "corpus" {
				return dir != "", nil
			}
			return false, nil
		},
		UpdateScripts: golden.Updating(),
	})
}
