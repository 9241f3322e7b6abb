// Package fusion transforms HLO modules before buffer assignment: simplification (Simplify, CSE, DCE) and fusion.
package fusion
