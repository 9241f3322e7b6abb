// Package goldenenv is the project's one switch for rewriting golden files,
// the environment variable HLOMEM_UPDATE, read without a flag.
//
// Package internal/golden (test code only) adds the -update flag over it;
// package assign/assigntest, which users' test binaries import, reads only
// this, so that importing it registers no flag: a user's test package that
// defines its own -update flag must not panic with "flag redefined".
package goldenenv

import "os"

// Var is the environment variable that makes golden checks rewrite their
// files instead of comparing.
const Var = "HLOMEM_UPDATE"

// Set reports whether Var is set to anything other than "" or "0".
func Set() bool {
	v := os.Getenv(Var)
	return v != "" && v != "0"
}
