package peakgolden

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Inputs is what Collect found: the HLO files to read, in order, and what
// it left out of the directories.
type Inputs struct {
	// Files are the HLO files, paths as given joined with the name found
	// in a directory, each file once.
	Files []string
	// Dirs lists, for each directory among the paths, what it gave.
	Dirs []DirInputs
	// Repeated lists the file paths given that name a file read already
	// from an earlier path (the same path twice, a file of a directory
	// given too, a link to it): they are not read again.
	Repeated []string
}

// DirInputs is what one directory path gave.
type DirInputs struct {
	Path string
	// Taken counts the HLO files taken from it.
	Taken int
	// NotHLO counts the files that are not HLO text: XLA's buffer
	// assignments, memory-usage reports, .dot, .pb, ... (and links to
	// directories, which are not followed).
	NotHLO int
	// Superseded counts HLO files of a module that has a better one: the
	// before_optimizations text of a module whose after_optimizations is
	// there, or the per-pass dumps of a module.
	Superseded int
	// Repeated counts the HLO files read already from an earlier path
	// (the directory given twice, or inside another one given, or a link
	// to a file taken already).
	Repeated int
}

// Skipped is the number of files left out.
func (d DirInputs) Skipped() int { return d.NotHLO + d.Superseded + d.Repeated }

// Note says in one line what the directory gave, for a user who wonders
// whether the right files were read.
func (d DirInputs) Note() string {
	s := fmt.Sprintf("%s: %d HLO %s", d.Path, d.Taken, plural(d.Taken, "file", "files"))
	if d.Skipped() == 0 {
		return s
	}
	s += fmt.Sprintf(", skipped %d", d.Skipped())
	var why []string
	if d.Repeated > 0 {
		why = append(why, fmt.Sprintf("%d read already from an earlier path", d.Repeated))
	}
	if d.NotHLO > 0 {
		why = append(why, fmt.Sprintf("%d not HLO (XLA's buffer assignments, memory reports, .dot, .pb, ...)", d.NotHLO))
	}
	if d.Superseded > 0 {
		why = append(why, fmt.Sprintf("%d superseded (before_optimizations or pass dumps of a module with a later dump)", d.Superseded))
	}
	return s + ": " + strings.Join(why, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Collect finds the HLO files of paths: a file is taken as it is, a
// directory is walked as an XLA dump directory (package doc, Inputs).
// Subdirectories whose name starts with "." are not entered. Each file is
// taken once, however many paths lead to it: the first one names it.
func Collect(paths []string) (*Inputs, error) {
	in := &Inputs{}
	var seen fileSet
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if seen.add(p, fi) {
				in.Files = append(in.Files, p)
			} else {
				in.Repeated = append(in.Repeated, p)
			}
			continue
		}
		d, all, err := collectDir(p)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, f := range all {
			fi, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			if seen.add(f, fi) {
				files = append(files, f)
			} else {
				d.Repeated++
			}
		}
		d.Taken = len(files)
		if len(all) == 0 {
			msg := "no HLO module found; an XLA dump directory (--xla_dump_to) holds files named module_NNNN.NAME.*after_optimizations.txt"
			if d.Skipped() > 0 {
				msg = d.Note() + "; " + msg
			} else {
				msg = p + ": " + msg
			}
			return nil, errors.New(msg)
		}
		in.Files = append(in.Files, files...)
		in.Dirs = append(in.Dirs, d)
	}
	return in, nil
}

// fileSet is the files taken so far, to take each once: by cleaned
// absolute path, and by identity (os.SameFile) for a file reached through
// a link or by another path. Files are compared by identity only with
// those of their size.
type fileSet struct {
	paths  map[string]bool
	bySize map[int64][]fs.FileInfo
}

// add reports whether the file at path, of info fi (os.Stat's), is new,
// and records it.
func (s *fileSet) add(path string, fi fs.FileInfo) bool {
	if s.paths == nil {
		s.paths, s.bySize = map[string]bool{}, map[int64][]fs.FileInfo{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	if s.paths[abs] {
		return false
	}
	for _, o := range s.bySize[fi.Size()] {
		if os.SameFile(o, fi) {
			return false
		}
	}
	s.paths[abs] = true
	s.bySize[fi.Size()] = append(s.bySize[fi.Size()], fi)
	return true
}

// collectDir walks root and takes each directory's files as one dump.
func collectDir(root string) (DirInputs, []string, error) {
	d := DirInputs{Path: root}
	var files []string
	var dirs []string              // in walk order
	names := map[string][]string{} // directory → its file names, in lexical order
	// With a separator at its end the root is walked even when it is a
	// link to a directory (WalkDir follows no other link).
	walkRoot := root
	if !os.IsPathSeparator(root[len(root)-1]) {
		walkRoot += string(filepath.Separator)
	}
	err := filepath.WalkDir(walkRoot, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != walkRoot && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			dirs = append(dirs, filepath.Clean(path))
			return nil
		}
		if e.Type()&fs.ModeSymlink != 0 {
			// A link to a file counts as the file; a link to a directory
			// is not followed (it could lead back up).
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() { // a broken link is no HLO either
				d.NotHLO++
				return nil
			}
		} else if !e.Type().IsRegular() {
			d.NotHLO++
			return nil
		}
		dir := filepath.Dir(path)
		names[dir] = append(names[dir], e.Name())
		return nil
	})
	if err != nil {
		return d, nil, err
	}
	for _, dir := range dirs {
		taken, err := pickDump(dir, names[dir], &d)
		if err != nil {
			return d, nil, err
		}
		for _, n := range taken {
			files = append(files, filepath.Join(dir, n))
		}
	}
	d.Taken = len(files)
	return d, files, nil
}

// stage is which of XLA's dumps of a module a file is.
type stage uint8

const (
	otherHLO stage = iota // HLO text of some other stage (a pass dump), or not from XLA
	before                // *before_optimizations.txt
	after                 // *after_optimizations.txt
)

// dumpNumber matches the module_NNNN. prefix of XLA's dump file names,
// NNNN being the module's unique ID within the process.
var dumpNumber = regexp.MustCompile(`^module_[0-9]+\.`)

// notHLOSuffixes are XLA's text dumps that are not HLO modules.
var notHLOSuffixes = []string{"-buffer-assignment.txt", "-memory-usage-report.txt"}

// dumpFile is one HLO file of a directory.
type dumpFile struct {
	name  string
	stage stage
	group string // module_NNNN., or "" outside XLA's naming
	key   string // before: the name between the group and the stage suffix
	rest  string // after: the name between the group and "after_optimizations.txt"
}

// pickDump chooses the files of one directory (names in lexical order):
// per module of XLA's naming the after_optimizations text, else the
// before_optimizations text, else its other HLO dumps; every HLO file
// outside XLA's naming. It counts what it leaves out in d.
func pickDump(dir string, names []string, d *DirInputs) ([]string, error) {
	var files []dumpFile
	for _, n := range names {
		f, ok, err := classify(dir, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			d.NotHLO++
			continue
		}
		files = append(files, f)
	}
	// Within a group (one module number), each before_optimizations file
	// names a module; an after_optimizations file belongs to the module
	// whose name it continues (NAME.sm_8.0_gpu_after_optimizations.txt).
	type module struct {
		before string
		afters []string
	}
	groups := map[string]map[string]*module{} // group → key → module
	hasDump := map[string]bool{}              // group has a before or after file
	for _, f := range files {
		if f.stage == before {
			if groups[f.group] == nil {
				groups[f.group] = map[string]*module{}
			}
			groups[f.group][f.key] = &module{before: f.name}
			hasDump[f.group] = true
		}
	}
	take := map[string]bool{}
	for _, f := range files {
		switch f.stage {
		case after:
			hasDump[f.group] = true
			var best *module
			bestLen := -1
			for k, m := range groups[f.group] {
				if strings.HasPrefix(f.rest, k+".") && len(k) > bestLen {
					best, bestLen = m, len(k)
				}
			}
			if best != nil {
				best.afters = append(best.afters, f.name)
			} else {
				take[f.name] = true
			}
		case otherHLO:
			if f.group == "" {
				take[f.name] = true
			}
		}
	}
	for _, mods := range groups {
		for _, m := range mods {
			if len(m.afters) == 0 {
				take[m.before] = true
			}
			for _, a := range m.afters {
				take[a] = true
			}
		}
	}
	for _, f := range files {
		if f.stage == otherHLO && f.group != "" && !hasDump[f.group] {
			take[f.name] = true
		}
	}
	var out []string
	for _, f := range files {
		if take[f.name] {
			out = append(out, f.name)
		} else {
			d.Superseded++
		}
	}
	sort.Strings(out)
	return out, nil
}

// classify tells whether the file name in dir is HLO text and which dump
// it is. A *.hlo file is HLO; a *.txt file is when XLA's name says so or
// when its text starts as a module does.
func classify(dir, name string) (dumpFile, bool, error) {
	f := dumpFile{name: name, group: dumpNumber.FindString(name)}
	switch {
	case strings.HasSuffix(name, ".hlo"):
	case strings.HasSuffix(name, ".txt"):
		for _, s := range notHLOSuffixes {
			if strings.HasSuffix(name, s) {
				return f, false, nil
			}
		}
		switch {
		case strings.HasSuffix(name, "before_optimizations.txt"):
			f.stage = before
			f.key = strings.TrimSuffix(strings.TrimSuffix(name[len(f.group):], "before_optimizations.txt"), ".")
			return f, true, nil
		case strings.HasSuffix(name, "after_optimizations.txt"):
			f.stage = after
			f.rest = strings.TrimSuffix(name[len(f.group):], "after_optimizations.txt")
			return f, true, nil
		}
		ok, err := looksLikeHLO(filepath.Join(dir, name))
		if err != nil || !ok {
			return f, false, err
		}
	default:
		return f, false, nil
	}
	return f, true, nil
}

// looksLikeHLO reports whether the file's first line that is neither
// blank nor a comment starts with "HloModule", as every module XLA dumps
// does.
func looksLikeHLO(path string) (bool, error) {
	file, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(bytes.TrimPrefix(sc.Bytes(), []byte("\uFEFF")))
		if len(line) == 0 || bytes.HasPrefix(line, []byte("//")) || bytes.HasPrefix(line, []byte("#")) {
			continue
		}
		return bytes.HasPrefix(line, []byte("HloModule")), nil
	}
	// A line too long for the scanner is no module header.
	return false, nil
}
