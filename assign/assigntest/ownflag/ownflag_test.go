// Package ownflag is a user's test package as many are: it defines the
// common -update flag for its own golden files, and imports
// assign/assigntest. When assigntest registered -update too, this test
// binary panicked before running anything: "flag redefined: update".
package ownflag

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign/assigntest"
	"github.com/hlomem/hlomem/internal/goldenenv"
	"github.com/stretchr/testify/require"
)

const usage = "this package's own switch for its golden files"

var update = flag.Bool("update", false, usage)

const model = `HloModule jit_f

ENTRY %main (x: f32[64,256]) -> f32[64,256] {
  %x = f32[64,256]{1,0} parameter(0)
  %y = f32[64,256]{1,0} exponential(%x)
  ROOT %z = f32[64,256]{1,0} negate(%y)
}
`

// TestOwnUpdateFlag: the package's -update is its own, importing
// assigntest registered no flag at all, and the package's flag drives
// assigntest through Options.Update.
func TestOwnUpdateFlag(t *testing.T) {
	f := flag.Lookup("update")
	require.NotNil(t, f)
	require.Equal(t, usage, f.Usage)
	flag.VisitAll(func(f *flag.Flag) {
		if f.Name != "update" && !strings.HasPrefix(f.Name, "test.") {
			t.Errorf("flag -%s registered by an import", f.Name)
		}
	})

	t.Setenv(goldenenv.Var, "")
	dir := t.TempDir()
	hlo := filepath.Join(dir, "f.hlo")
	require.NoError(t, os.WriteFile(hlo, []byte(model), 0o644))
	file := filepath.Join(dir, "f.peak")
	_, err := assigntest.Check(context.Background(), []string{hlo}, assigntest.Options{File: file})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.EqualError(t, err, file+": no such golden file; write it with Options.Update (in a Go test, HLOMEM_UPDATE=1) and review it")

	assigntest.Golden(t, []string{hlo}, assigntest.Options{File: file, Update: true})
	assigntest.Golden(t, []string{hlo}, assigntest.Options{File: file, Update: *update})
}
