package liveness

// SearchReport is what a searching scheduler (package schedule: best,
// search, optimal) found, as the analysis it laid out carries it
// (Analysis.Search) and WriteJSON prints it. schedule.SearchResult holds
// it with the schedule and the candidates.
type SearchReport struct {
	// LowerBound is the module's LowerBound under the schedule found;
	// Start is the incumbent's (the best heuristic's, by the same
	// figure), Heuristic its name; XLABest is that of XLA's choice among
	// the heuristics (schedule.HeuristicBest), after the copies it may
	// need.
	LowerBound, Start, XLABest int64
	Heuristic                  string
	// Proven reports that no order of the module's computations (keeping
	// the order of each buffer's values, so that no further copies are
	// needed) has a smaller LowerBound. Why says why not, when not.
	Proven bool
	Why    string
	// Expansions is the work done; Stopped reports that the budget or the
	// timeout ended the search.
	Expansions int64
	Stopped    bool
	// OwnOrder reports that the schedule is the module's own order (a
	// module XLA scheduled), which no order found beat.
	OwnOrder bool
}
