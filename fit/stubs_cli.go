package fit

// TEMPORARY (engineer "cli"): stand-ins for Donate and Offload, which the
// "donate" and "offload" engineers write in donate.go and offload.go. This
// file is deleted when theirs land; until then both levers say "not built".

import (
	"context"
	"errors"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
)

// errNotBuilt is what the stand-ins return.
var errNotBuilt = errors.New("not built")

// Donation is one donatable entry argument (contract of issue 33).
type Donation struct {
	Param      int64
	ParamIndex hlo.ShapeIndex
	Name       string
	Bytes      int64
	Output     hlo.ShapeIndex
	Saved      int64
}

// DonateResult is what Donate found (contract of issue 33).
type DonateResult struct {
	Module        *hlo.Module
	Args          []Donation
	Before, After int64
}

// Donate is a stand-in until donate.go lands.
func Donate(ctx context.Context, m *hlo.Module, opts compile.Options) (*DonateResult, error) {
	return nil, errNotBuilt
}

// Offloaded is one array moved to host memory (contract of issue 33).
type Offloaded struct {
	Name    string
	Kind    string
	OpName  string
	Source  string
	Bytes   int64
	Seconds float64
}

// OffloadResult is what Offload did (contract of issue 33).
type OffloadResult struct {
	Module        *hlo.Module
	Arrays        []Offloaded
	Before, After int64
	Bandwidth     float64
}

// Offload is a stand-in until offload.go lands.
func Offload(ctx context.Context, m *hlo.Module, limit int64, opts compile.Options, device string) (*OffloadResult, error) {
	return nil, errNotBuilt
}
