package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/golden"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) != "hlomem" {
		// The tests that run commands in this process (Main) must not
		// read the machine's client-allocator settings: run --device
		// would model another pool. (Scripts run hlomem with their own
		// environment, which may set them on purpose.)
		for _, k := range gpu.EnvVars {
			os.Unsetenv(k)
		}
	}
	testscript.Main(m, map[string]func(){
		"hlomem": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestClientEnvCleared: the in-process tests see none of gpu.EnvVars, even
// when the machine running them sets it.
func TestClientEnvCleared(t *testing.T) {
	for _, k := range gpu.EnvVars {
		_, set := os.LookupEnv(k)
		require.False(t, set, k)
	}
}

// scriptCmds are the commands scripts have beyond testscript's own, added
// by the files that define them (some only on some systems).
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}

// TestScripts runs the txtar scripts in testdata/script. Scripts see the
// corpus directory as $CORPUS; the condition [corpus] is true when it exists,
// [cmd:NAME] when the script command NAME (scriptCmds) is there, and
// [root] when the tests run as root.
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
		Cmds: scriptCmds,
		Condition: func(cond string) (bool, error) {
			if cond == "corpus" {
				return dir != "", nil
			}
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if name, ok := strings.CutPrefix(cond, "cmd:"); ok {
				_, has := scriptCmds[name]
				return has, nil
			}
			return false, nil
		},
		UpdateScripts: golden.Updating(),
	})
}
