package hlo

// Opcode identifies an HLO operation. The table below is the single source
// of every opcode's text name, operand count and properties; the parser, the
// verifier and every later pass read it.
type Opcode uint8

// Variadic marks an opcode that takes any number of operands.
const Variadic = -1

// OpProps are properties of an opcode that passes care about.
type OpProps uint16

const (
	// Elementwise: output element i depends only on operand elements i, and
	// every operand has the output's dimensions (XLA's IsElementwise).
	Elementwise OpProps = 1 << iota
	// SideEffect: the op has effects beyond its result (never removed or duplicated).
	SideEffect
	// AsyncStart / AsyncDone: the first and last half of an asynchronous pair.
	AsyncStart
	AsyncDone
	// Collective: communicates across replicas or partitions.
	Collective
	// Expensive: not worth duplicating into several consumers when fusing.
	Expensive
	// Parallel: its called computations run in a parallel context
	// (reduce/map/sort/scatter to_apply and the like); their values are thread-local.
	Parallel
	// Caller: the op may call computations (XLA's
	// MightHaveCalledComputations); no other op names one.
	Caller
	// ToApply: the op calls the computation named by to_apply=, which it
	// cannot do without (XLA's parser requires the attribute).
	ToApply
)

// OpInfo describes one opcode.
type OpInfo struct {
	Name  string
	Arity int // number of operands, or Variadic
	Props OpProps
}

// The opcodes XLA has as of 2026 (xla/hlo/ir/hlo_opcode.h), in the header's order,
// each named after its HLO text (OpOptBarrier is XLA's kOptimizationBarrier).
// OpUnknown holds an opcode this table does not know (a newer XLA's); the
// instruction keeps the name so printing loses nothing.
const (
	OpUnknown Opcode = iota
	OpAbs
	OpAcos
	OpAcosh
	OpAdd
	OpAddDependency
	OpAfterAll
	OpAllGather
	OpAllGatherDone
	OpAllGatherStart
	OpAllReduce
	OpAllReduceDone
	OpAllReduceStart
	OpAllToAll
	OpAnd
	OpAsin
	OpAsinh
	OpAsyncDone
	OpAsyncStart
	OpAsyncUpdate
	OpAtan2
	OpAtanh
	OpBatchNormGrad
	OpBatchNormInference
	OpBatchNormTraining
	OpBitcast
	OpBitcastConvert
	OpBroadcast
	OpCall
	OpCbrt
	OpCeil
	OpCholesky
	OpClamp
	OpCountLeadingZeros
	OpCollectiveBroadcast
	OpCollectivePermute
	OpCollectivePermuteDone
	OpCollectivePermuteStart
	OpCompare
	OpComplex
	OpConcatenate
	OpConditional
	OpConstant
	OpConvert
	OpConvolution
	OpCopy
	OpCopyDone
	OpCopyStart
	OpCosine
	OpCosh
	OpCustomCall
	OpDivide
	OpDomain
	OpDot
	OpDynamicReshape
	OpDynamicSlice
	OpDynamicUpdateSlice
	OpErf
	OpExponential
	OpExponentialMinusOne
	OpFft
	OpFloor
	OpFusion
	OpGather
	OpGetDimensionSize
	OpGetTupleElement
	OpImag
	OpInfeed
	OpIota
	OpIsFinite
	OpLog
	OpLogPlusOne
	OpLogistic
	OpMap
	OpMaximum
	OpMinimum
	OpMulhi
	OpMultiply
	OpNegate
	OpNot
	OpOptBarrier
	OpOr
	OpOutfeed
	OpPad
	OpParameter
	OpPartitionID
	OpPopcnt
	OpPower
	OpRaggedAllToAll
	OpRaggedDot
	OpReal
	OpRecv
	OpRecvDone
	OpReduce
	OpReducePrecision
	OpReduceScatter
	OpReduceWindow
	OpRemainder
	OpReplicaID
	OpReshape
	OpReverse
	OpRng
	OpRngBitGenerator
	OpRngGetAndUpdateState
	OpRoundNearestAfz
	OpRoundNearestEven
	OpRsqrt
	OpScaledDot
	OpScan
	OpScatter
	OpSelect
	OpSelectAndScatter
	OpSend
	OpSendDone
	OpSetDimensionSize
	OpShiftLeft
	OpShiftRightArithmetic
	OpShiftRightLogical
	OpSign
	OpSine
	OpSinh
	OpSlice
	OpSort
	OpSqrt
	OpStochasticConvert
	OpSubtract
	OpTan
	OpTanh
	OpTopK
	OpTranspose
	OpTriangularSolve
	OpTuple
	OpWhile
	OpXor
	numOpcodes
)

const (
	ew  = Elementwise
	exp = Elementwise | Expensive
	app = Caller | ToApply
)

var opTable = [numOpcodes]OpInfo{
	OpUnknown:                {"unknown", Variadic, 0},
	OpAbs:                    {"abs", 1, ew},
	OpAcos:                   {"acos", 1, exp},
	OpAcosh:                  {"acosh", 1, exp},
	OpAdd:                    {"add", 2, ew},
	OpAddDependency:          {"add-dependency", 2, 0},
	OpAfterAll:               {"after-all", Variadic, 0},
	OpAllGather:              {"all-gather", Variadic, Collective},
	OpAllGatherDone:          {"all-gather-done", 1, Collective | AsyncDone},
	OpAllGatherStart:         {"all-gather-start", Variadic, Collective | AsyncStart},
	OpAllReduce:              {"all-reduce", Variadic, Collective | Parallel | app},
	OpAllReduceDone:          {"all-reduce-done", 1, Collective | AsyncDone},
	OpAllReduceStart:         {"all-reduce-start", Variadic, Collective | AsyncStart | Parallel | app},
	OpAllToAll:               {"all-to-all", Variadic, Collective},
	OpAnd:                    {"and", 2, ew},
	OpAsin:                   {"asin", 1, exp},
	OpAsinh:                  {"asinh", 1, exp},
	OpAsyncDone:              {"async-done", Variadic, AsyncDone | Caller},
	OpAsyncStart:             {"async-start", Variadic, AsyncStart | Caller},
	OpAsyncUpdate:            {"async-update", Variadic, Caller},
	OpAtan2:                  {"atan2", 2, exp},
	OpAtanh:                  {"atanh", 1, exp},
	OpBatchNormGrad:          {"batch-norm-grad", 5, Expensive},
	OpBatchNormInference:     {"batch-norm-inference", 5, Expensive},
	OpBatchNormTraining:      {"batch-norm-training", 3, Expensive},
	OpBitcast:                {"bitcast", 1, 0},
	OpBitcastConvert:         {"bitcast-convert", 1, 0},
	OpBroadcast:              {"broadcast", 1, 0},
	OpCall:                   {"call", Variadic, app},
	OpCbrt:                   {"cbrt", 1, exp},
	OpCeil:                   {"ceil", 1, ew},
	OpCholesky:               {"cholesky", 1, Expensive},
	OpClamp:                  {"clamp", 3, ew},
	OpCountLeadingZeros:      {"count-leading-zeros", 1, ew},
	OpCollectiveBroadcast:    {"collective-broadcast", Variadic, Collective},
	OpCollectivePermute:      {"collective-permute", Variadic, Collective},
	OpCollectivePermuteDone:  {"collective-permute-done", 1, Collective | AsyncDone},
	OpCollectivePermuteStart: {"collective-permute-start", Variadic, Collective | AsyncStart},
	OpCompare:                {"compare", 2, ew},
	OpComplex:                {"complex", 2, ew},
	OpConcatenate:            {"concatenate", Variadic, 0},
	OpConditional:            {"conditional", Variadic, Caller},
	OpConstant:               {"constant", 0, 0},
	OpConvert:                {"convert", 1, ew},
	OpConvolution:            {"convolution", 2, Expensive},
	OpCopy:                   {"copy", 1, ew},
	OpCopyDone:               {"copy-done", 1, AsyncDone},
	OpCopyStart:              {"copy-start", 1, AsyncStart},
	OpCosine:                 {"cosine", 1, exp},
	OpCosh:                   {"cosh", 1, exp},
	OpCustomCall:             {"custom-call", Variadic, Parallel | Caller},
	OpDivide:                 {"divide", 2, exp},
	OpDomain:                 {"domain", 1, 0},
	OpDot:                    {"dot", 2, Expensive},
	OpDynamicReshape:         {"dynamic-reshape", Variadic, 0},
	OpDynamicSlice:           {"dynamic-slice", Variadic, 0},
	OpDynamicUpdateSlice:     {"dynamic-update-slice", Variadic, 0},
	OpErf:                    {"erf", 1, exp},
	OpExponential:            {"exponential", 1, exp},
	OpExponentialMinusOne:    {"exponential-minus-one", 1, exp},
	OpFft:                    {"fft", 1, Expensive},
	OpFloor:                  {"floor", 1, ew},
	OpFusion:                 {"fusion", Variadic, Caller},
	OpGather:                 {"gather", 2, 0},
	OpGetDimensionSize:       {"get-dimension-size", 1, 0},
	OpGetTupleElement:        {"get-tuple-element", 1, 0},
	OpImag:                   {"imag", 1, ew},
	OpInfeed:                 {"infeed", 1, SideEffect},
	OpIota:                   {"iota", 0, 0},
	OpIsFinite:               {"is-finite", 1, ew},
	OpLog:                    {"log", 1, exp},
	OpLogPlusOne:             {"log-plus-one", 1, exp},
	OpLogistic:               {"logistic", 1, exp},
	OpMap:                    {"map", Variadic, Elementwise | Parallel | app},
	OpMaximum:                {"maximum", 2, ew},
	OpMinimum:                {"minimum", 2, ew},
	OpMulhi:                  {"mulhi", 2, ew},
	OpMultiply:               {"multiply", 2, ew},
	OpNegate:                 {"negate", 1, ew},
	OpNot:                    {"not", 1, ew},
	OpOptBarrier:             {"opt-barrier", 1, 0},
	OpOr:                     {"or", 2, ew},
	OpOutfeed:                {"outfeed", 2, SideEffect},
	OpPad:                    {"pad", 2, 0},
	OpParameter:              {"parameter", 0, 0},
	OpPartitionID:            {"partition-id", 0, 0},
	OpPopcnt:                 {"popcnt", 1, ew},
	OpPower:                  {"power", 2, exp},
	OpRaggedAllToAll:         {"ragged-all-to-all", 6, Collective},
	OpRaggedDot:              {"ragged-dot", 3, Expensive},
	OpReal:                   {"real", 1, ew},
	OpRecv:                   {"recv", 1, SideEffect | AsyncStart},
	OpRecvDone:               {"recv-done", 1, SideEffect | AsyncDone},
	OpReduce:                 {"reduce", Variadic, Parallel | app},
	OpReducePrecision:        {"reduce-precision", 1, ew},
	OpReduceScatter:          {"reduce-scatter", Variadic, Collective | Parallel | app},
	OpReduceWindow:           {"reduce-window", Variadic, Parallel | app},
	OpRemainder:              {"remainder", 2, exp},
	OpReplicaID:              {"replica-id", 0, 0},
	OpReshape:                {"reshape", 1, 0},
	OpReverse:                {"reverse", 1, 0},
	OpRng:                    {"rng", Variadic, SideEffect},
	OpRngBitGenerator:        {"rng-bit-generator", 1, 0},
	OpRngGetAndUpdateState:   {"rng-get-and-update-state", 0, SideEffect},
	OpRoundNearestAfz:        {"round-nearest-afz", 1, ew},
	OpRoundNearestEven:       {"round-nearest-even", 1, ew},
	OpRsqrt:                  {"rsqrt", 1, exp},
	OpScaledDot:              {"scaled-dot", 4, Expensive},
	OpScan:                   {"scan", Variadic, Parallel | Caller},
	OpScatter:                {"scatter", Variadic, Parallel | app},
	OpSelect:                 {"select", 3, ew},
	OpSelectAndScatter:       {"select-and-scatter", 3, Parallel | Caller},
	OpSend:                   {"send", 2, SideEffect | AsyncStart},
	OpSendDone:               {"send-done", 1, SideEffect | AsyncDone},
	OpSetDimensionSize:       {"set-dimension-size", 2, 0},
	OpShiftLeft:              {"shift-left", 2, ew},
	OpShiftRightArithmetic:   {"shift-right-arithmetic", 2, ew},
	OpShiftRightLogical:      {"shift-right-logical", 2, ew},
	OpSign:                   {"sign", 1, ew},
	OpSine:                   {"sine", 1, exp},
	OpSinh:                   {"sinh", 1, exp},
	OpSlice:                  {"slice", 1, 0},
	OpSort:                   {"sort", Variadic, Parallel | app},
	OpSqrt:                   {"sqrt", 1, exp},
	OpStochasticConvert:      {"stochastic-convert", 2, ew},
	OpSubtract:               {"subtract", 2, ew},
	OpTan:                    {"tan", 1, exp},
	OpTanh:                   {"tanh", 1, exp},
	OpTopK:                   {"topk", 1, 0},
	OpTranspose:              {"transpose", 1, 0},
	OpTriangularSolve:        {"triangular-solve", 2, Expensive},
	OpTuple:                  {"tuple", Variadic, 0},
	OpWhile:                  {"while", 1, Caller},
	OpXor:                    {"xor", 2, ew},
}

// The opcodes' earlier Go names, which did not spell their HLO text.
const (
	// Deprecated: use OpCountLeadingZeros.
	OpClz = OpCountLeadingZeros
	// Deprecated: use OpCosine.
	OpCos = OpCosine
	// Deprecated: use OpExponential.
	OpExp = OpExponential
	// Deprecated: use OpExponentialMinusOne.
	OpExpm1 = OpExponentialMinusOne
	// Deprecated: use OpLogPlusOne.
	OpLog1p = OpLogPlusOne
	// Deprecated: use OpOptBarrier.
	OpOptimizationBarrier = OpOptBarrier
	// Deprecated: use OpSine.
	OpSin = OpSine
)

var opByName = func() map[string]Opcode {
	m := make(map[string]Opcode, numOpcodes)
	for op := Opcode(1); op < numOpcodes; op++ {
		m[opTable[op].Name] = op
	}
	return m
}()

// Info returns the table entry of op.
func (op Opcode) Info() OpInfo {
	if op >= numOpcodes {
		return opTable[OpUnknown]
	}
	return opTable[op]
}

// String returns the opcode's HLO text name ("unknown" for OpUnknown;
// use (*Instruction).OpName for an unknown opcode's own name).
func (op Opcode) String() string { return op.Info().Name }

// Arity returns the operand count of op, or Variadic.
func (op Opcode) Arity() int { return op.Info().Arity }

// Has reports whether op has every property in p.
func (op Opcode) Has(p OpProps) bool { return op.Info().Props&p == p }

// LookupOpcode returns the opcode with the given text name.
func LookupOpcode(name string) (Opcode, bool) {
	op, ok := opByName[name]
	return op, ok
}

// Opcodes returns every known opcode in table order.
func Opcodes() []Opcode {
	ops := make([]Opcode, 0, numOpcodes-1)
	for op := Opcode(1); op < numOpcodes; op++ {
		ops = append(ops, op)
	}
	return ops
}
