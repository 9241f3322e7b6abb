package cli

import (
	"os"
	osexec "os/exec"
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
// It runs itself again in a test process started with every one of them
// set, so it checks the clearing whatever the machine running it sets.
func TestClientEnvCleared(t *testing.T) {
	for _, k := range gpu.EnvVars {
		_, set := os.LookupEnv(k)
		require.False(t, set, k)
	}
	if os.Getenv("HLOMEM_TEST_ENV_CHILD") != "" {
		return
	}
	cmd := osexec.Command(os.Args[0], "-test.run=^TestClientEnvCleared$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HLOMEM_TEST_ENV_CHILD=1")
	for _, k := range gpu.EnvVars {
		cmd.Env = append(cmd.Env, k+"=0.5")
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test process started with the variables set:\n%s", out)
	require.Contains(t, string(out), "PASS")
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
	examples, err := filepath.Abs("../../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("CORPUS", dir)
			e.Setenv("EXAMPLES", examples) // the bundled examples (demo.hlo, transformer.hlo)
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
