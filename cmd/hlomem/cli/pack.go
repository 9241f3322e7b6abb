package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/hlomem/hlomem/assign/pack"
)

// packJSON is the machine-readable result of hlomem pack.
type packJSON struct {
	Height        int64            `json:"height"`
	LowerBound    int64            `json:"lower_bound"`
	Capacity      int64            `json:"capacity,omitempty"`
	Algorithm     string           `json:"algorithm"`
	ProvenOptimal bool             `json:"proven_optimal"`
	Seconds       float64          `json:"seconds"`
	Buffers       []packJSONBuffer `json:"buffers"`
}

type packJSONBuffer struct {
	ID     string `json:"id"`
	Offset int64  `json:"offset"`
}

// packFlags defines the flags of hlomem pack on fs and returns its run func.
func packFlags(fs *flagSet, e *env) func(args []string) error {
	algo := fs.String("algo", "auto", "NAME", "packer: "+strings.Join(pack.Algorithms(), ", "))
	capacity := fs.Int64("capacity", 0, "N", "bytes available; exit 2 when no packing fits (0: no limit, minimise the height)")
	budget := fs.Duration("budget", 0, "DURATION", "time auto and exact may spend after the portfolio (0: 10s; --algo=portfolio for none)")
	gap := fs.Float64("gap", 0, "F", "relative distance from the lower bound within which auto and exact skip the descents on instances over 5,000 items (0: search on)")
	format := fs.String("format", "csv", "csv|json", "output format: csv (the input rows plus an offset column) or json")
	return func(args []string) error {
		file, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		fail := func(format string, a ...any) error {
			return &exitError{code: exitFailure, msg: fmt.Sprintf("hlomem pack: "+format, a...)}
		}
		if err := oneOf("pack", "format", *format, []string{"csv", "json"}); err != nil {
			return err
		}
		if *capacity < 0 {
			return fail("negative capacity %d", *capacity)
		}
		if *gap < 0 || *gap != *gap {
			return fail("--gap must not be negative, got %v", *gap)
		}
		if *budget < 0 {
			return fail("--budget must not be negative, got %v (0 means the default, 10s; --algo=portfolio searches no further)", *budget)
		}
		if err := checkAlgo("pack", *algo); err != nil {
			return err
		}

		name := inputName(file)
		r, err := openInput(e, file)
		if err != nil {
			return fail("%v", err)
		}
		defer r.Close()
		p, cols, err := pack.ReadCSVColumns(r, name)
		if err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}

		// On inputs of millions of rows the parser's garbage and then the
		// packers' indexes are hundreds of megabytes; collecting them between
		// phases keeps the peak memory near what is live.
		runtime.GC()

		ctx := e.ctx
		sol, err := pack.Pack(ctx, p, pack.Options{Algorithm: *algo, Capacity: *capacity, Budget: *budget, Gap: *gap})
		var capErr *pack.CapacityError
		switch {
		case errors.As(err, &capErr):
			// Keep going: the best packing is printed with the error.
		case err != nil:
			return fail("%s: %v", name, err)
		}
		runtime.GC()
		if err := pack.Check(p, sol.Packing); err != nil {
			return fail("internal error: packer %s: %v", sol.Algorithm, err)
		}

		switch *format {
		case "csv":
			// The input's columns, whatever the values: an alignment column
			// of zeros stays.
			w := pack.NewCSVWriter(e.stdout, cols)
			if err := w.Write(p, sol.Packing); err != nil {
				return fail("%v", err)
			}
			if err := w.Flush(); err != nil {
				return fail("%v", err)
			}
		case "json":
			out := packJSON{
				Height:        sol.Height(),
				LowerBound:    sol.LowerBound(),
				Capacity:      *capacity,
				Algorithm:     sol.Algorithm,
				ProvenOptimal: sol.Optimal(),
				Seconds:       sol.Elapsed.Round(time.Microsecond).Seconds(),
				Buffers:       make([]packJSONBuffer, len(p.Buffers)),
			}
			for i, b := range p.Buffers {
				out.Buffers[i] = packJSONBuffer{ID: b.ID, Offset: sol.Offsets[i]}
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				return fail("%v", err)
			}
		}
		if capErr != nil {
			over := capErr.Need - capErr.Limit
			return &exitError{code: exitInfeasible, msg: fmt.Sprintf(
				"hlomem pack: %s: no packing found within capacity %d: the best needs %d bytes, %d (%.2f%%) over; the lower bound is %d",
				name, capErr.Limit, capErr.Need, over, 100*float64(over)/float64(capErr.Limit), sol.LowerBound())}
		}
		return nil
	}
}
