package eval

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// dotPerm arranges an operand as [batch, free, contracting] (lhs) or
// [batch, contracting, free] (rhs) and returns the permutation plus sizes.
func dotPerm(dims []int64, batch, contract []int64, contractLast bool) (perm []int64, b, f, k int64, free []int64, err error) {
	used := make([]bool, len(dims))
	b, k = 1, 1
	for _, d := range append(append([]int64(nil), batch...), contract...) {
		if d < 0 || int(d) >= len(dims) || used[d] {
			return nil, 0, 0, 0, nil, fmt.Errorf("bad dot dimension %d", d)
		}
		used[d] = true
	}
	for _, d := range batch {
		b *= dims[d]
	}
	for _, d := range contract {
		k *= dims[d]
	}
	f = 1
	for d := range dims {
		if !used[d] {
			free = append(free, int64(d))
			f *= dims[d]
		}
	}
	perm = append(perm, batch...)
	if contractLast {
		perm = append(perm, free...)
		perm = append(perm, contract...)
	} else {
		perm = append(perm, contract...)
		perm = append(perm, free...)
	}
	return perm, b, f, k, free, nil
}

func isIdentity(p []int64) bool {
	for i, d := range p {
		if int64(i) != d {
			return false
		}
	}
	return true
}

// permute returns v (of row-major dims) transposed by perm.
func permute[T any](v []T, dims, perm []int64) []T {
	if isIdentity(perm) {
		return v
	}
	out := make([]T, len(v))
	for i, j := range transposeIndex(dims, perm) {
		out[i] = v[j]
	}
	return out
}

// matmul returns the B products of [M,K] and [K,N] row-major matrices,
// batch-major, accumulating in T.
func matmul[T float32 | float64 | int64](a, b []T, B, M, K, N int64) []T {
	c := make([]T, B*M*N)
	for bi := int64(0); bi < B; bi++ {
		A := a[bi*M*K : (bi+1)*M*K]
		Bm := b[bi*K*N : (bi+1)*K*N]
		C := c[bi*M*N : (bi+1)*M*N]
		for i := int64(0); i < M; i++ {
			crow := C[i*N : (i+1)*N]
			arow := A[i*K : (i+1)*K]
			for k := int64(0); k < K; k++ {
				av := arow[k]
				brow := Bm[k*N : (k+1)*N]
				brow = brow[:len(crow)]
				for j := range crow {
					crow[j] += av * brow[j]
				}
			}
		}
	}
	return c
}

func convertSlice[T, U float32 | float64](v []T) []U {
	out := make([]U, len(v))
	for i, x := range v {
		out[i] = U(x)
	}
	return out
}

// evalDot computes a general dot. Floating results other than f64 accumulate
// in f32 (as XLA's CPU backend does for f32); f64 in f64; integers in 64-bit
// two's complement, truncated to the result type.
func evalDot(in *hlo.Instruction, x, y Literal) (Literal, error) {
	t := in.Shape.Elem
	if err := checkNumeric(in, t, x.Shape.Elem, y.Shape.Elem); err != nil {
		return Literal{}, err
	}
	if isFloat(t) != isFloat(x.Shape.Elem) || isFloat(t) != isFloat(y.Shape.Elem) || t == hlo.PRED {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s for types %s, %s -> %s", in.OpName(), x.Shape.Elem, y.Shape.Elem, t)
	}
	if _, ok := in.Attr("sparsity"); ok {
		return Literal{}, fmt.Errorf("cannot evaluate sparse %s", in.OpName())
	}
	dd := in.Dot()
	if dd == nil {
		dd = &hlo.DotDims{}
	}
	if len(dd.LhsBatch) != len(dd.RhsBatch) || len(dd.LhsContracting) != len(dd.RhsContracting) {
		return Literal{}, fmt.Errorf("mismatched dot dimensions")
	}
	for i := range dd.LhsBatch {
		if x.Shape.Dims[dd.LhsBatch[i]] != y.Shape.Dims[dd.RhsBatch[i]] {
			return Literal{}, fmt.Errorf("batch dimension sizes differ")
		}
	}
	for i := range dd.LhsContracting {
		if x.Shape.Dims[dd.LhsContracting[i]] != y.Shape.Dims[dd.RhsContracting[i]] {
			return Literal{}, fmt.Errorf("contracting dimension sizes differ")
		}
	}
	lp, B, M, K, lfree, err := dotPerm(x.Shape.Dims, dd.LhsBatch, dd.LhsContracting, true)
	if err != nil {
		return Literal{}, err
	}
	rp, _, N, _, rfree, err := dotPerm(y.Shape.Dims, dd.RhsBatch, dd.RhsContracting, false)
	if err != nil {
		return Literal{}, err
	}
	// Result dims: batch, lhs free, rhs free.
	var want []int64
	for _, d := range dd.LhsBatch {
		want = append(want, x.Shape.Dims[d])
	}
	for _, d := range lfree {
		want = append(want, x.Shape.Dims[d])
	}
	for _, d := range rfree {
		want = append(want, y.Shape.Dims[d])
	}
	if !slices.Equal(want, in.Shape.Dims) {
		return Literal{}, fmt.Errorf("result dims %v, want %v", in.Shape.Dims, want)
	}
	if !isFloat(t) {
		v, err := logicalAll(logicalI, x, y)
		if err != nil {
			return Literal{}, err
		}
		return outI(in.Shape, matmul(permute(v[0], x.Shape.Dims, lp), permute(v[1], y.Shape.Dims, rp), B, M, K, N))
	}
	v, err := logicalAll(logicalF, x, y)
	if err != nil {
		return Literal{}, err
	}
	a, b := permute(v[0], x.Shape.Dims, lp), permute(v[1], y.Shape.Dims, rp)
	if t == hlo.F64 {
		return outF(in.Shape, matmul(a, b, B, M, K, N))
	}
	c := matmul(convertSlice[float64, float32](a), convertSlice[float64, float32](b), B, M, K, N)
	return outF(in.Shape, convertSlice[float32, float64](c))
}
