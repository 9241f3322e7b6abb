package hlo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// intoSource walks every string reachable from v (through pointers,
// slices, structs and maps) and returns the first that shares memory with
// src, as a path, or "".
func intoSource(v reflect.Value, src string, path string, seen map[uintptr]bool) string {
	lo := uintptr(unsafe.Pointer(unsafe.StringData(src)))
	hi := lo + uintptr(len(src))
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= lo && p < hi {
			return path + " = " + s
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return ""
		}
		seen[v.Pointer()] = true
		return intoSource(v.Elem(), src, path, seen)
	case reflect.Interface:
		if !v.IsNil() {
			return intoSource(v.Elem(), src, path, seen)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if p := intoSource(v.Field(i), src, path+"."+v.Type().Field(i).Name, seen); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && (v.IsNil() || v.Len() == 0) {
			return ""
		}
		if v.Kind() == reflect.Slice {
			// Shared slices (the parser shares shapes) are walked once.
			k := v.Pointer() ^ uintptr(v.Len())<<48
			if seen[k] {
				return ""
			}
			seen[k] = true
		}
		for i := 0; i < v.Len(); i++ {
			if p := intoSource(v.Index(i), src, path, seen); p != "" {
				return p
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := intoSource(it.Key(), src, path, seen); p != "" {
				return p
			}
			if p := intoSource(it.Value(), src, path, seen); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestDetach: after detach no string reachable from the modules of any
// corpus file shares memory with the text they were parsed from (so
// ParseFile does not keep it alive), and the modules print as before.
func TestDetach(t *testing.T) {
	files := corpusHLOFiles(t)
	checked, walked := 0, 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == noModuleFile {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := string(b)
		mods, err := ParseString(name, src)
		if err != nil {
			continue // the corpus holds invalid inputs for the error tests
		}
		before := printAll(mods)
		detach(mods)
		require.Equal(t, before, printAll(mods), "%s: detach changed the modules", name)
		// The walk by reflection is slow: files up to 1 MB (all but the
		// largest few).
		if len(src) <= 1<<20 {
			for _, m := range mods {
				p := intoSource(reflect.ValueOf(m), src, m.Name, map[uintptr]bool{})
				require.Empty(t, p, "%s: a string still shares memory with the source", name)
			}
			walked++
		}
		fromFile, err := ParseFile(f)
		require.NoError(t, err)
		require.Equal(t, before, printAll(fromFile), "%s: ParseFile", name)
		checked++
	}
	t.Logf("%d files parsed through ParseFile and detached, %d walked", checked, walked)
	require.GreaterOrEqual(t, checked, 5)
	require.GreaterOrEqual(t, walked, 5)
}
