// Package schedule chooses the order in which the instructions of each
// sequential computation of an HLO module run, for modules XLA has not
// scheduled, so that the module needs as little memory as possible. It
// sits over package liveness, which it imports (never the reverse):
// liveness analyses a module under a schedule, and this package proposes
// schedules and scores them by what liveness computes.
//
// # What it owns
//
// The schedulers, by name (Names, Check, ByName), and Apply, the pipeline
// step (package compile sequences it, as every other pass) that lays an
// analysis out under the named scheduler and adds the copies its order
// needs. The search's own machinery is here too: the segment model of a
// window of an order (segment.go) and the exact search over its orders
// (exact.go).
//
// # The schedulers
//
//   - Keep: the module's own order (liveness.ModuleOrder); for a module
//     XLA scheduled, XLA's schedule.
//   - PostOrder: XLA's MakeInstructionPostOrder (liveness.PostOrder).
//   - DFS: XLA's DFSMemoryScheduler, a post-order that visits first the
//     operands with more extra users and larger subgraphs (DFSOrder).
//   - List: XLA's ListMemoryScheduler, greedy over the ready instructions
//     by bytes freed less bytes defined (ListOrder).
//   - Heuristic: XLA's DefaultMemoryScheduler, the one of list, DFS,
//     post-order and the module's own order with the smallest live peak
//     (HeuristicBest).
//   - Search, and Best (Apply's default for a module XLA has not
//     scheduled; the name XLA's choice had before it became the search):
//     the best heuristic by the module's lower bound, then exact searches
//     of windows of the order around the worst step, within a budget of
//     expansions (RunSearch).
//   - Optimal: Search, then every computation of up to OptimalBlocks
//     instructions searched whole, exactly, saying when the result is
//     proven optimal and why not otherwise (RunOptimal).
//
// search.go opens with the essay on the two searches, segment.go with
// the model that makes a window's figure exact, exact.go with the dynamic
// program over sets of scheduled instructions (after Serenity, MLSys
// 2020), scheduler.go with XLA's heuristics.
//
// # Invariants
//
// Every order a scheduler returns is a topological order of each
// sequential computation: every operand and every control predecessor
// runs before its users (liveness.Schedule.Validate accepts it).
//
// The searches never return an order worse than their start by their
// measure. The start is the best order that needs no further copies among
// the heuristics, the module's own order and the schedule the analysis
// was laid out under (SearchResult.Start); the measure is the module's
// LowerBound. A window is taken only when its worst step is below the
// peak, and the result is laid out and scored by LowerBound itself: when
// that is not below the start, the start is returned. With Options.Cost
// the plan's cost decides between a scheduled module's own order and the
// orders found, and the result is then never above the module's own order
// in bound nor in cost. When every heuristic order needs copies of its
// own there is no start: XLA's choice is returned (NeedsCopies) and Apply
// repairs it and searches again.
//
// The searches are deterministic: their budget counts expansions, not
// time; the timeout (Options.Timeout) is a safety net counted in the
// process's CPU time, so a busy machine does not cut a search short where
// an idle one would not, and a result it cut short says so (Stopped).
//
// # Errors
//
// A name that is not a scheduler's is refused with a *liveness.Error of
// kind ErrUnknown ("schedule: unknown scheduler ..."), so that the
// pipeline names the pass in it as it does in liveness's own errors; the
// other errors are liveness's, from the analyses Apply runs.
package schedule
