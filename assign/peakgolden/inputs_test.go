package peakgolden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const tinyHLO = "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n  ROOT %n = f32[4]{0} negate(%p)\n}\n"

// writeTree creates the files (relative paths) under a fresh directory,
// each holding a small HLO module unless other gives its text.
func writeTree(t *testing.T, files []string, other map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		text, ok := other[f]
		if !ok {
			text = tinyHLO
		}
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

func rel(t *testing.T, root string, files []string) []string {
	var out []string
	for _, f := range files {
		r, err := filepath.Rel(root, f)
		require.NoError(t, err)
		out = append(out, filepath.ToSlash(r))
	}
	return out
}

func TestCollectDumpDirectory(t *testing.T) {
	files := []string{
		// A GPU module with every dump: after_optimizations wins.
		"module_0001.jit_step.before_optimizations.txt",
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations.txt",
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations-buffer-assignment.txt",
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations-memory-usage-report.txt",
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations.dot",
		"module_0001.jit_step.before_optimizations.hlo.pb",
		// Pass dumps of it (--xla_dump_hlo_pass_re) are superseded too.
		"module_0001.jit_step.0003.simplification.after_algsimp.txt",
		// A module XLA has not optimized yet: before_optimizations only.
		"module_0002.jit_init.before_optimizations.txt",
		// A module name with dots, and a CPU dump.
		"module_0003.SyncTensorsGraph.7.before_optimizations.txt",
		"module_0003.SyncTensorsGraph.7.cpu_after_optimizations.txt",
		// Only pass dumps: they are what there is.
		"module_0004.jit_f.0001.after_pass.txt",
		// Outside XLA's naming: a user's own files.
		"train.hlo",
		"notes.txt",
		"README.md",
		// Subdirectories are walked; hidden ones are not.
		"sub/module_0001.jit_step.before_optimizations.txt",
		".git/module_0009.jit_x.before_optimizations.txt",
	}
	dir := writeTree(t, files, map[string]string{
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations-buffer-assignment.txt":   "BufferAssignment:\n",
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations-memory-usage-report.txt": "Total bytes used: 0\n",
		"notes.txt": "// a note\nnot HLO\n",
	})
	in, err := Collect([]string{dir})
	require.NoError(t, err)
	require.Equal(t, []string{
		"module_0001.jit_step.sm_8.0_gpu_after_optimizations.txt",
		"module_0002.jit_init.before_optimizations.txt",
		"module_0003.SyncTensorsGraph.7.cpu_after_optimizations.txt",
		"module_0004.jit_f.0001.after_pass.txt",
		"train.hlo",
		"sub/module_0001.jit_step.before_optimizations.txt",
	}, rel(t, dir, in.Files))
	require.Len(t, in.Dirs, 1)
	d := in.Dirs[0]
	require.Equal(t, 6, d.Taken)
	require.Equal(t, 6, d.NotHLO, "buffer assignment, report, .dot, .pb, notes.txt, README.md")
	require.Equal(t, 3, d.Superseded, "two before_optimizations and a pass dump")
	require.Equal(t, dir+": 6 HLO files, skipped 9: 6 not HLO (XLA's buffer assignments, memory reports, .dot, .pb, ...), 3 superseded (before_optimizations or pass dumps of a module with a later dump)", d.Note())
}

func TestCollectNumberCollision(t *testing.T) {
	// Two processes dumped into one directory: module_0001 is two
	// modules. Each keeps its own best dump.
	files := []string{
		"module_0001.jit_a.before_optimizations.txt",
		"module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt",
		"module_0001.jit_b.before_optimizations.txt",
		// jit_a.x would match jit_a by a prefix without the dot; the
		// longest before name that it continues wins.
		"module_0001.jit_a.x.before_optimizations.txt",
		"module_0001.jit_a.x.sm_8.0_gpu_after_optimizations.txt",
	}
	dir := writeTree(t, files, nil)
	in, err := Collect([]string{dir})
	require.NoError(t, err)
	require.Equal(t, []string{
		"module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt",
		"module_0001.jit_a.x.sm_8.0_gpu_after_optimizations.txt",
		"module_0001.jit_b.before_optimizations.txt",
	}, rel(t, dir, in.Files))
	require.Equal(t, 2, in.Dirs[0].Superseded)
}

func TestCollectFilesAndErrors(t *testing.T) {
	dir := writeTree(t, []string{"a.txt", "empty/x.dot", "none/README.md"}, map[string]string{"a.txt": "not HLO, but named"})
	// A file is taken whatever its name or content says.
	in, err := Collect([]string{filepath.Join(dir, "a.txt")})
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "a.txt")}, in.Files)
	require.Empty(t, in.Dirs)

	_, err = Collect([]string{filepath.Join(dir, "missing")})
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.Mkdir(filepath.Join(dir, "void"), 0o755))
	_, err = Collect([]string{filepath.Join(dir, "void")})
	require.EqualError(t, err, filepath.Join(dir, "void")+": no HLO module found; an XLA dump directory (--xla_dump_to) holds files named module_NNNN.NAME.*after_optimizations.txt")
	_, err = Collect([]string{filepath.Join(dir, "empty")})
	require.EqualError(t, err, filepath.Join(dir, "empty")+": 0 HLO files, skipped 1: 1 not HLO (XLA's buffer assignments, memory reports, .dot, .pb, ...); no HLO module found; an XLA dump directory (--xla_dump_to) holds files named module_NNNN.NAME.*after_optimizations.txt")
}

func TestCollectSymlinks(t *testing.T) {
	src := writeTree(t, []string{"module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt"}, nil)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(src, "module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt"), filepath.Join(dir, "module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt")))
	require.NoError(t, os.Symlink(src, filepath.Join(dir, "linked-dir")))
	require.NoError(t, os.Symlink(filepath.Join(src, "gone.txt"), filepath.Join(dir, "broken.txt")))
	in, err := Collect([]string{dir})
	require.NoError(t, err)
	require.Equal(t, []string{"module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt"}, rel(t, dir, in.Files))
	require.Equal(t, 2, in.Dirs[0].NotHLO, "the link to a directory is not followed, the broken link not read")
}

func TestCollectLinkedRoot(t *testing.T) {
	src := writeTree(t, []string{"module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt"}, nil)
	link := filepath.Join(t.TempDir(), "dump")
	require.NoError(t, os.Symlink(src, link))
	for _, root := range []string{link, link + "/"} {
		in, err := Collect([]string{root})
		require.NoError(t, err)
		require.Equal(t, []string{filepath.Join(link, "module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt")}, in.Files)
		require.Equal(t, root, in.Dirs[0].Path)
	}
}

func TestCollectEachFileOnce(t *testing.T) {
	after := "module_0001.jit_a.sm_8.0_gpu_after_optimizations.txt"
	dir := writeTree(t, []string{after, "module_0001.jit_a.before_optimizations.txt", "sub/" + after, "x.hlo"}, nil)
	sub := filepath.Join(dir, "sub")
	file := filepath.Join(dir, after)
	t.Chdir(dir)

	// The same directory twice, once with a slash: every file once, and
	// the second directory says why it gave none.
	in, err := Collect([]string{dir, dir + "/"})
	require.NoError(t, err)
	require.Equal(t, []string{after, "x.hlo", "sub/" + after}, rel(t, dir, in.Files))
	require.Len(t, in.Dirs, 2)
	require.Equal(t, 3, in.Dirs[0].Taken)
	require.Equal(t, 0, in.Dirs[1].Taken)
	require.Equal(t, 3, in.Dirs[1].Repeated)
	require.Equal(t, dir+"/: 0 HLO files, skipped 4: 3 read already from an earlier path, 1 superseded (before_optimizations or pass dumps of a module with a later dump)", in.Dirs[1].Note())

	// A directory inside another, a file inside one, by a relative path
	// and an absolute one.
	in, err = Collect([]string{sub, ".", after, file})
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(sub, after), after, "x.hlo"}, in.Files)
	require.Equal(t, 1, in.Dirs[1].Repeated, "sub/ was given first")
	require.Equal(t, []string{after, file}, in.Repeated)

	// A link to a file (a symbolic one and a hard one) is the file.
	links := t.TempDir()
	require.NoError(t, os.Symlink(file, filepath.Join(links, "soft.hlo")))
	require.NoError(t, os.Link(file, filepath.Join(links, "hard.hlo")))
	in, err = Collect([]string{file, links})
	require.NoError(t, err)
	require.Equal(t, []string{file}, in.Files)
	require.Equal(t, 2, in.Dirs[0].Repeated)
	// Two distinct files of the same bytes are two files.
	require.NoError(t, os.WriteFile(filepath.Join(links, "copy.hlo"), []byte(tinyHLO), 0o644))
	in, err = Collect([]string{file, links})
	require.NoError(t, err)
	require.Equal(t, []string{file, filepath.Join(links, "copy.hlo")}, in.Files)
}
