package assign

import (
	"sort"

	"github.com/hlomem/hlomem/liveness"
)

// Peak returns the step at which the plan's lower bound is reached (-1
// when nothing is live) and the values live there, largest first (ties by
// value ID): what a user looks at to see why the program needs its
// memory.
func (as *Assignment) Peak() (step int, live []*liveness.Value) {
	if as == nil {
		return -1, nil
	}
	t := as.bound.Time
	for _, b := range as.bound.Live {
		for _, v := range b.Values {
			if v.Scheduled && v.Range.Contains(t) {
				live = append(live, v)
			}
		}
	}
	sort.SliceStable(live, func(i, j int) bool {
		if live[i].Size != live[j].Size {
			return live[i].Size > live[j].Size
		}
		return live[i].ID < live[j].ID
	})
	return t, live
}
