package liveness

// The stack-trace breakdown that XLA's current HloLiveRange dump appends to
// its peak section (FormatStackTraceBreakdown, hlo_stack_trace.cc): the
// bytes live at the peak as a tree of call paths. A value's path runs from
// the entry down to its instruction: for each computation on the way, its
// name and then the op_name (or, without metadata, the name) of the
// instruction calling the next one; the value's own instruction ends the
// path, its index appended. An op_name of the form params['a/b'].c splits
// into params, a, b, c. A computation with several callers contributes one
// path per caller (in instruction order) and its bytes are shared out among
// them. Siblings are listed largest first, ties by name; each line shows
// the node's share of the total, its bytes with those below it, its own
// bytes, and what is left after it in print order.

import (
	"bufio"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

type stackNode struct {
	name        string
	total, self int64
	children    map[string]*stackNode
}

func (n *stackNode) child(name string) *stackNode {
	if n.children == nil {
		n.children = map[string]*stackNode{}
	}
	c := n.children[name]
	if c == nil {
		c = &stackNode{name: name}
		n.children[name] = c
	}
	return c
}

func (n *stackNode) sum() int64 {
	n.total = n.self
	for _, c := range n.children {
		n.total += c.sum()
	}
	return n.total
}

var (
	paramsVar  = regexp.MustCompile(`^[a-zA-Z_]\w*`)
	paramsKey  = regexp.MustCompile(`^\['([^']+)'\]`)
	paramsAttr = regexp.MustCompile(`^\.(\w+)`)
)

// splitParams splits params['a/b'].c into params, a, b, c; anything not of
// that form (one key at least, nothing left over) stays whole.
func splitParams(s string) []string {
	rest := s
	m := paramsVar.FindString(rest)
	if m == "" {
		return []string{s}
	}
	out := []string{m}
	rest = rest[len(m):]
	keys := false
	for {
		if k := paramsKey.FindStringSubmatch(rest); k != nil {
			keys = true
			out = append(out, strings.Split(k[1], "/")...)
			rest = rest[len(k[0]):]
			continue
		}
		if at := paramsAttr.FindStringSubmatch(rest); at != nil {
			out = append(out, at[1])
			rest = rest[len(at[0]):]
			continue
		}
		break
	}
	if rest != "" || !keys {
		return []string{s}
	}
	return out
}

// stackLabel is the op_name of in, or its name without metadata.
func stackLabel(in *hlo.Instruction) string {
	if in.Metadata != nil && in.Metadata.OpName != "" {
		return in.Metadata.OpName
	}
	return in.Name
}

// callPaths returns every path from a computation nobody calls down to in.
func (a *Analysis) callPaths(in *hlo.Instruction, depth int) [][]string {
	leaf := append([]string{in.Parent.Name}, splitParams(stackLabel(in))...)
	callers := append([]*hlo.Instruction(nil), a.callers[in.Parent.ID]...)
	if len(callers) == 0 || depth > len(a.Module.Computations) {
		return [][]string{leaf}
	}
	sort.SliceStable(callers, func(i, j int) bool { return callers[i].ID < callers[j].ID })
	var out [][]string
	for _, c := range callers {
		for _, p := range a.callPaths(c, depth+1) {
			out = append(out, append(p, leaf...))
		}
	}
	return out
}

// groupDigits writes n with a space between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		if s[i-1] == '-' {
			break
		}
		s = s[:i] + " " + s[i:]
	}
	return s
}

// writeStackBreakdown writes the breakdown of the values live at the peak.
func writeStackBreakdown(b *bufio.Writer, a *Analysis, live []*Value) {
	root := &stackNode{}
	var total int64
	for _, v := range live {
		total += xlaSize(v)
	}
	for _, v := range live {
		paths := a.callPaths(v.Inst, 0)
		share, extra := xlaSize(v)/int64(len(paths)), xlaSize(v)%int64(len(paths))
		for _, p := range paths {
			n := root
			for i, part := range p {
				if i == len(p)-1 && len(v.Index) > 0 {
					part += "{" + strings.Trim(v.Index.String(), "{}") + "}"
				}
				n = n.child(part)
			}
			n.self += share
			if extra > 0 {
				n.self++
				extra--
			}
		}
	}
	root.sum()
	fmt.Fprintf(b, "  Stack trace breakdown for peak usage: %s bytes\n", groupDigits(total))
	remaining := total
	var walk func(n *stackNode, prefix string, last bool)
	walk = func(n *stackNode, prefix string, last bool) {
		if n.name != "" {
			conn := "├── "
			switch {
			case prefix == "  ":
				conn = "  "
			case last:
				conn = "└── "
			}
			pct := 0.0
			if total > 0 {
				pct = 100 * float64(n.total) / float64(total)
			}
			remaining -= n.self
			fmt.Fprintf(b, "%s%s%s (%.1f%%, total: %s bytes, current: %s bytes, remaining: %s bytes)\n",
				prefix, conn, n.name, pct, groupDigits(n.total), groupDigits(n.self), groupDigits(remaining))
		}
		var kids []*stackNode
		for _, c := range n.children {
			if c.total != 0 {
				kids = append(kids, c)
			}
		}
		sort.Slice(kids, func(i, j int) bool {
			if kids[i].total != kids[j].total {
				return kids[i].total > kids[j].total
			}
			return kids[i].name < kids[j].name
		})
		childPrefix := prefix
		if n.name != "" {
			if last {
				childPrefix += "    "
			} else {
				childPrefix += "│   "
			}
		}
		for i, c := range kids {
			walk(c, childPrefix, i == len(kids)-1)
		}
	}
	walk(root, "  ", true)
}
