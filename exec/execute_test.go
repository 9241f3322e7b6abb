package exec

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

// TestPlannedRunEqualsReferenceCorpus: every module of the corpus (each
// module of each paired dump and of each file under hlo/) is planned and
// run twice on the same random arguments, once on the plan's bytes and
// once with a region per buffer (the reference), and the two runs' outputs
// agree bit for bit. A module the comparison cannot run is on
// referenceAllowList with why, and fails the test with the error that
// stopped it when it is not; an allow-listed module that runs and agrees
// fails the test too, so that the list only holds what still stands. The
// modules of referenceSlow are not run unless HLOMEM_REFERENCE_SLOW is set
// (then they must agree like any other). A file that does not parse
// counts as one module, keyed by its path. Under -short only the sampled
// files' modules are run and checked against the lists.
func TestPlannedRunEqualsReferenceCorpus(t *testing.T) {
	root := corpus.Path(t)
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	runSlow := os.Getenv(referenceSlowEnv) != ""
	var mu sync.Mutex
	agreed, allowed, slow := 0, 0, 0
	visited := map[string]bool{}
	count := func(n *int, key string) {
		mu.Lock()
		*n++
		visited[key] = true
		mu.Unlock()
	}
	// judge holds what stopped the module at key, nil when it agreed,
	// against the allow-list.
	judge := func(t *testing.T, key string, err error) {
		allow, listed := referenceAllowList[key]
		switch {
		case err == nil && listed:
			t.Errorf("%s: the planned run equals the reference run now: remove it from referenceAllowList", key)
		case err == nil:
			count(&agreed, key)
		case !listed:
			t.Errorf("%s: %v (not on referenceAllowList)", key, err)
		case !strings.Contains(err.Error(), allow.stop):
			t.Errorf("%s: %v; referenceAllowList expects %q", key, err, allow.stop)
		default:
			count(&allowed, key)
		}
	}
	eachFile(t, files, func(t *testing.T, f string) {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		mods, err := hlo.ParseFile(f)
		if err != nil {
			judge(t, rel, fmt.Errorf("parse: %w", err))
			return
		}
		for key, m := range moduleKeys(rel, mods) {
			if _, ok := referenceSlow[key]; ok && !runSlow {
				count(&slow, key)
				continue
			}
			start := time.Now()
			err := plannedEqualsReference(t, key, m)
			t.Logf("%s: %v (%v)", key, err, time.Since(start).Round(time.Millisecond))
			judge(t, key, err)
		}
	})
	if !testing.Short() {
		for _, list := range []iter.Seq[string]{maps.Keys(referenceAllowList), maps.Keys(referenceSlow)} {
			for key := range list {
				if !visited[key] {
					t.Errorf("%s is listed but not in the corpus", key)
				}
			}
		}
	}
	t.Logf("%d modules: planned run equals reference; %d on referenceAllowList; %d on referenceSlow, not run (set %s to run them)", agreed, allowed, slow, referenceSlowEnv)
	require.Positive(t, agreed)
}

// rel returns file's path relative to the corpus, with slashes: the start
// of its modules' keys.
func rel(t testing.TB, file string) string {
	r, err := filepath.Rel(corpus.Path(t), file)
	require.NoError(t, err)
	return filepath.ToSlash(r)
}

// listedReference reports whether the module named name of the file rel
// (relative to the corpus) is on referenceAllowList or referenceSlow,
// under its key or, for a name repeated in the file, any of its keys.
func listedReference(rel, name string) bool {
	key := rel + ":" + name
	for _, list := range []iter.Seq[string]{maps.Keys(referenceAllowList), maps.Keys(referenceSlow)} {
		for k := range list {
			if k == key || k == rel || strings.HasPrefix(k, key+"#") {
				return true
			}
		}
	}
	return false
}

// moduleKeys yields the modules of a file (rel, relative to the corpus)
// keyed rel:name, a name met again in the file suffixed #2, #3, ....
func moduleKeys(rel string, mods []*hlo.Module) iter.Seq2[string, *hlo.Module] {
	return func(yield func(string, *hlo.Module) bool) {
		seen := map[string]int{}
		for _, m := range mods {
			key := rel + ":" + m.Name
			if seen[m.Name]++; seen[m.Name] > 1 {
				key += "#" + strconv.Itoa(seen[m.Name])
			}
			if !yield(key, m) {
				return
			}
		}
	}
}

// maxReferencePlan is the largest plan the comparison runs: the planned
// run holds the plan's bytes and the reference run about as much again,
// two modules at a time. Time more than memory sets it: the corpus's plans
// above it (on referenceAllowList with their sizes) are the torch-xla GPU
// dumps of 0.8 to 1.4 GiB, which their cuBLAS custom-calls stop after a
// minute or two of evaluation each, and language-model benchmarks of many
// GiB; below it, every module runs.
const maxReferencePlan = 512 << 20

// plannedEqualsReference prepares, plans and runs m, planned and
// reference, and returns what stopped it, nil when both runs computed
// the same outputs. A planned run that fails, or differs, where the
// reference run succeeded fails the test at once: that is a wrong plan,
// never a module to allow-list.
func plannedEqualsReference(t *testing.T, key string, m *hlo.Module) error {
	a, err := preptest.Prepare(m, "")
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	as, err := assign.Assign(context.Background(), a, assign.Options{Budget: 20 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("assign: %w", err)
	}
	if n := as.Stats.TotalBytes; n > maxReferencePlan {
		return fmt.Errorf("plan of %d bytes, over the reference run's limit of %d", n, maxReferencePlan)
	}
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
	ref, err := Execute(context.Background(), as, args, nil, Options{Reference: true})
	if err != nil {
		return err
	}
	got, err := Execute(context.Background(), as, args, nil, Options{})
	require.NoError(t, err, "%s: the reference run succeeded", key)
	require.Equal(t, len(ref.Outputs), len(got.Outputs), key)
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "%s: output %d differs between the planned and the reference run", key, i)
	}
	return nil
}

// referenceSlowEnv names the environment variable that makes
// TestPlannedRunEqualsReferenceCorpus run the modules of referenceSlow.
const referenceSlowEnv = "HLOMEM_REFERENCE_SLOW"

// TestHugeArgumentsAreErrors: an argument whose shape is absurd is an
// error before anything is allocated for it, in a reference run and a
// planned one alike.
func TestHugeArgumentsAreErrors(t *testing.T) {
	m, err := hlo.ParseModule("huge.hlo", `HloModule huge
ENTRY e {
  a = f32[1000000,1000000] parameter(0)
  ROOT b = f32[1000000,1000000] negate(a)
}
`)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	require.NoError(t, err)
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
	require.Len(t, args, 1)
	for _, ref := range []bool{true, false} {
		_, err = Execute(context.Background(), as, args, nil, Options{Reference: ref})
		require.EqualError(t, err, "runtime: argument 0: shape f32[1000000,1000000] is too large to evaluate: 4000000000000 bytes, more than "+strconv.Itoa(eval.MaxLiteralBytes))
	}
}

// referenceAllowList holds the corpus modules whose planned run the test
// cannot compare with a reference run, keyed as moduleKeys yields them:
// stop is part of the error that stops each, why says why that stands.
var referenceAllowList = map[string]struct{ stop, why string }{
	"hlo/neuron/bert__bert_dp_graph_2.hlo:SyncTensorsGraph.1450":                                                                                   {"cannot evaluate opcode all-reduce", "all-reduce: a collective across devices; the evaluator runs one"},
	"hlo/neuron/bert__bert_dp_graph_3.hlo:SyncTensorsGraph.1730":                                                                                   {"cannot evaluate opcode all-reduce", "all-reduce: a collective across devices; the evaluator runs one"},
	"hlo/neuron/bert__bert_dp_graph_4.hlo:SyncTensorsGraph.1864":                                                                                   {"over the reference run's limit", "plan of 1.5 GiB: over maxReferencePlan"},
	"hlo/neuron/bert__bert_dp_graph_5.hlo:SyncTensorsGraph.2104":                                                                                   {"over the reference run's limit", "plan of 1.5 GiB: over maxReferencePlan"},
	"hlo/neuron/gpt__gpt2_tp-1.hlo:FullyUnrolled.205":                                                                                              {"cannot evaluate opcode custom-call", "custom-call custom-call.186 (AwsNeuronTransferWithStaticRing): a foreign function the evaluator has no semantics for"},
	"hlo/neuron/llama2__llama2_dp-1_tp-1_pp-1.hlo:SyncTensorsGraph.6428":                                                                           {"over the reference run's limit", "plan of 7941.0 GiB: over maxReferencePlan"},
	"hlo/neuron/llama2__llama2_dp-1_tp-8_pp-4.hlo:SyncTensorsGraph.2690":                                                                           {"over the reference run's limit", "plan of 1.1 GiB: over maxReferencePlan"},
	"hlo/neuron/llama__tp_8.hlo:FullyUnrolled.235":                                                                                                 {"cannot evaluate opcode custom-call", "custom-call custom-call.211 (AwsNeuronTransferWithStaticRing): a foreign function the evaluator has no semantics for"},
	"hlo/neuron/mlp__mlp_dp_final.hlo:SyncTensorsGraph.357":                                                                                        {"cannot evaluate opcode custom-call", "custom-call custom-call.13 (AwsNeuronTransferWithStaticRing): a foreign function the evaluator has no semantics for"},
	"hlo/neuron/qwb_linear_model__pp_1_final.hlo:SyncTensorsGraph.1084":                                                                            {"cannot evaluate opcode custom-call", "custom-call custom-call.19 (AwsNeuronTransferWithStaticRing): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__cpu__benchmarks__hlo__diffrax.b380012920.hlo:jit__lambda_":                                                                  {"constant has no literal values", "constant constant.4 is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_test_step.hlo:jit_test_step":                                                       {"constant has no literal values", "constant constant.88 is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_train_step.hlo:jit_train_step":                                                     {"constant has no literal values", "constant constant.226 is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/backends__cpu__benchmarks__hlo__gemma2_2b_keras_jax.hlo:jit_compiled_generate_function":                                               {"over the reference run's limit", "plan of 11.9 GiB: over maxReferencePlan"},
	"hlo/xla/backends__cpu__benchmarks__hlo__gemma3_1b_flax_call.hlo:jit___call__":                                                                 {"over the reference run's limit", "plan of 2.4 GiB: over maxReferencePlan"},
	"hlo/xla/backends__cpu__benchmarks__hlo__jax.issue.26021.hlo:jit_controller":                                                                   {"cannot evaluate opcode custom-call", "custom-call custom-call.162 (lapack_dgeqrf_ffi): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__cpu__benchmarks__hlo__jax.issue.33666.linx.slow_0100.module_0013.hlo:jit_run":                                               {"constant has no literal values", "constant constant.37 is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/backends__cpu__benchmarks__hlo__jax.issue.33666.linx.slow_0428.module_0006.hlo:jit_run":                                               {"constant has no literal values", "constant constant.3691 is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/backends__cpu__benchmarks__hlo__topk_logits_k10_1x50000_bf16.hlo:jit_topk_k10":                                                        {"cannot evaluate opcode topk", "topk not evaluated: its order of ties and NaNs is the backend's"},
	"hlo/xla/backends__cpu__benchmarks__huge_hlo__gemma3_4b_text_keras_jax_batch1_in8_out100.hlo:jit_compiled_generate_function":                   {"over the reference run's limit", "plan of 17.0 GiB: over maxReferencePlan"},
	"hlo/xla/backends__cpu__benchmarks__huge_hlo__gemma4_2b_bf16.hlo:jit_compiled_generate_function":                                               {"over the reference run's limit", "plan of 11.1 GiB: over maxReferencePlan"},
	"hlo/xla/backends__cpu__tests__thunk_coverage__cpu.hlo:cpu_thunk_coverage":                                                                     {"cannot evaluate opcode custom-call", "custom-call topk_res (TopK): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__cpu__tests__thunk_coverage__host_offload.hlo:host_offload":                                                                  {"cannot evaluate opcode fft", "fft not evaluated: four FFT kinds over up to three dimensions, not cheap"},
	"hlo/xla/backends__gpu__tests__bitcast-convert.hlo:e":                                                                                          {"element type s4 is not supported", "s4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/backends__gpu__tests__calling_convention.hlo:SliceToDynamic":                                                                          {"cannot evaluate opcode custom-call", "custom-call custom-call (SliceToDynamic): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__kernel_reuse.hlo:KernelReuse":                                                                                   {"cannot evaluate opcode custom-call", "custom-call custom-call (__cublas$lt$matmul): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__kernel_reuse.hlo:KernelReuse#2":                                                                                 {"cannot evaluate opcode custom-call", "custom-call custom-call.1 (__cublas$lt$matmul): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__kernel_reuse.hlo:KernelReuse#3":                                                                                 {"cannot evaluate opcode custom-call", "custom-call custom-call (__cublas$lt$matmul): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__kernel_reuse.hlo:KernelReuse#4":                                                                                 {"cannot evaluate opcode custom-call", "custom-call custom-call (__cublas$lt$matmul): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__offload_scan_output.hlo:jit_f":                                                                                  {"cannot evaluate opcode custom-call", "custom-call custom-call.9 (annotate_device_placement): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__pad_to_static.hlo:PadToStatic":                                                                                  {"cannot evaluate opcode custom-call", "custom-call custom_call_2 (PadToStatic): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__rng_get_and_update_state.hlo:TestModule":                                                                        {"cannot evaluate opcode rng-get-and-update-state", "rng-get-and-update-state: the backend's global random state, which an evaluation of one module does not have"},
	"hlo/xla/backends__gpu__tests__slice_to_dynamic.hlo:SliceToDynamic":                                                                            {"cannot evaluate opcode custom-call", "custom-call custom-call (SliceToDynamic): a foreign function the evaluator has no semantics for"},
	"hlo/xla/backends__gpu__tests__sub_byte_collectives.hlo:e":                                                                                     {"element type s4 is not supported", "s4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/backends__gpu__tests__sub_byte_collectives.hlo:e#2":                                                                                   {"element type s4 is not supported", "s4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/backends__gpu__tests__sub_byte_collectives.hlo:e#3":                                                                                   {"element type f4e2m1fn is not supported", "f4e2m1fn: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/backends__gpu__tests__sub_byte_collectives.hlo:e#4":                                                                                   {"element type u4 is not supported", "u4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/backends__gpu__tests__sub_byte_collectives.hlo:e#5":                                                                                   {"element type u4 is not supported", "u4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/hlo__tools__tests__generate_hlo_test_checks_test_input.hlo:TestSymbolNameDisambiguation":                                              {"argument is f32[4], parameter is f32[]", "invalid HLO: the call passes f32[4] constants to f32[] parameters"},
	"hlo/xla/hlo__tools__tests__generate_hlo_test_checks_test_output.hlo:TestSymbolNameDisambiguation":                                             {"argument is f32[4], parameter is f32[]", "invalid HLO: the call passes f32[4] constants to f32[] parameters"},
	"hlo/xla/hlo__transforms__tests__cholesky_expander.hlo:CholeskyExpanderTest":                                                                   {"cannot evaluate opcode cholesky", "cholesky not evaluated: a factorization whose result on the random (not positive definite) arguments is implementation-defined"},
	"hlo/xla/hlo__transforms__tests__cholesky_expander.hlo:CholeskyExpanderTest#2":                                                                 {"cannot evaluate opcode cholesky", "cholesky not evaluated: a factorization whose result on the random (not positive definite) arguments is implementation-defined"},
	"hlo/xla/hlo__transforms__tests__cholesky_expander.hlo:CholeskyExpanderTest#3":                                                                 {"cannot evaluate opcode cholesky", "cholesky not evaluated: a factorization whose result on the random (not positive definite) arguments is implementation-defined"},
	"hlo/xla/hlo__transforms__tests__operand_upcaster.hlo:TestDot":                                                                                 {"dot: result dims [8], want [8 8]", "invalid HLO: dot(s8[8], s16[8]) with no contracting dimensions is an outer product, s32[8,8], not s32[8]"},
	"hlo/xla/hlo__transforms__tests__rewrite_bf16_conv_to_onednn.hlo:TestBf16ConvolutionNotRewritableToOnednn":                                     {"convolution gives [8 0 5 5 32]", "invalid HLO: the window and padding give bf16[8,0,5,5,32], not the bf16[4,4,5,5,32] declared"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestDefaultAlgorithm":                                                          {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestPhiloxAlgorithm":                                                           {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestPhiloxAlgorithm#2":                                                         {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestPhiloxAlgorithm#3":                                                         {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestThreeFryAlgorithm":                                                         {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestThreeFryAlgorithm#2":                                                       {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/hlo__transforms__tests__rng_bit_generator_expander.hlo:TestThreeFryAlgorithm#3":                                                       {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"hlo/xla/service__gpu__tests__all_reduce.hlo:Test":                                                                                             {"cannot evaluate opcode all-reduce", "all-reduce: a collective across devices; the evaluator runs one"},
	"hlo/xla/service__gpu__tests__fusion.hlo:TestModule":                                                                                           {"over the reference run's limit", "plan of 784.0 MiB: over maxReferencePlan"},
	"hlo/xla/service__gpu__tests__select_and_scatter.hlo:SelectAndScatter":                                                                         {"cannot evaluate opcode select-and-scatter", "select-and-scatter not evaluated: windows with select and scatter computations, not cheap"},
	"hlo/xla/tools__benchmarks__hlo__hlo_gemma4_2b_bf16.hlo:jit_compiled_generate_function":                                                        {"over the reference run's limit", "plan of 11.1 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_405b_bf16_16x8.hlo:jit_train_step":                                                                {"over the reference run's limit", "plan of 113.9 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_405b_bf16_64x8.hlo:jit_train_step":                                                                {"over the reference run's limit", "plan of 69.8 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_405b_fp8_16x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 113.3 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_405b_fp8_64x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 69.2 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_70b_bf16_16x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 69.4 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_70b_bf16_32x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 61.2 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_70b_fp8_16x8.hlo:jit_train_step":                                                                  {"over the reference run's limit", "plan of 69.4 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_70b_fp8_32x8.hlo:jit_train_step":                                                                  {"over the reference run's limit", "plan of 61.2 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo:jit_train_step":                                                                   {"over the reference run's limit", "plan of 124.8 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8_no_te.hlo:jit_train_step":                                                             {"over the reference run's limit", "plan of 124.8 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama31_8b_bf16_2x8.hlo:jit_train_step":                                                                   {"over the reference run's limit", "plan of 113.9 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama3_8b_bf16_activation_offloading_1x8.hlo:jit_train_step":                                              {"over the reference run's limit", "plan of 53.6 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_llama3_8b_cp_bf16_1x4.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 42.9 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 70.0 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo:jit_train_step":                                                                 {"over the reference run's limit", "plan of 51.7 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__hlo_torax_iterhybrid_predictor_corrector_f64.hlo:jit___call":                                                  {"constant has no literal values", "constant constant.1767.clone is elided ({...}) in the dump: its values are not there to evaluate"},
	"hlo/xla/tools__benchmarks__hlo__nv_maxtext_1n1g_jit_train_step_before_optimization.hlo:jit_train_step":                                        {"over the reference run's limit", "plan of 39.8 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__nv_maxtext_deepseek_1n4g_jit_train_step_before_optimization.hlo:jit_train_step":                               {"over the reference run's limit", "plan of 408.2 GiB: over maxReferencePlan"},
	"hlo/xla/tools__benchmarks__hlo__u4_all_gather_1x8.hlo:e":                                                                                      {"element type u4 is not supported", "u4: a sub-byte element type; literals hold whole bytes per element"},
	"hlo/xla/tools__data__benchmarking__mobilenet_v2.hlo:IrToHlo.3979":                                                                             {"over the reference run's limit", "plan of 7.0 GiB: over maxReferencePlan"},
	"hlo/xla/tools__hlo_opt__tests__gpu_hlo_collective_cse.hlo:m":                                                                                  {"cannot evaluate opcode all-gather", "all-gather: a collective across devices; the evaluator runs one"},
	"hlo/xla/tools__hlo_opt__tests__list_passes.hlo":                                                                                               {"no HLO module in file", "no module to run: the RUN lines of an hlo-opt --list-passes test, which takes none"},
	"hlo/xla/tools__multihost_hlo_runner__data__fp8_gemm_loop.hlo:test":                                                                            {"over the reference run's limit", "plan of 2.0 GiB: over maxReferencePlan"},
	"hlo/xla/tools__multihost_hlo_runner__data__sharded_computation.hlo:pjit_ref_func":                                                             {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"hlo/xla/tools__multihost_hlo_runner__data__transformer_engine_softmax.hlo:f":                                                                  {"cannot evaluate opcode custom-call", "custom-call custom-call (te_scaled_softmax_forward_ffi): a foreign function the evaluator has no semantics for"},
	"hlo/xla/tools__print_indexing_test.hlo:main":                                                                                                  {"argument is s32[1024], parameter is s32[]", "invalid HLO: the fusion passes s32[1024] to the s32[] parameter b"},
	"hlo/xla/tools__tests__data__cholesky.hlo:main":                                                                                                {"cannot evaluate opcode cholesky", "cholesky not evaluated: a factorization whose result on the random (not positive definite) arguments is implementation-defined"},
	"hlo/xla/tools__tests__data__invalid_concat.hlo:module_computation":                                                                            {"concatenate: operand dims [2 1] do not match result [3 2]", "invalid HLO, XLA's own bad-input test data: concatenate of f32[2,1] and f32[3,1] on dimension 1 gives f32[2,2], not f32[3,2]"},
	"hlo/xla/tools__tests__hlo_extractor_test.hlo:test":                                                                                            {"cannot evaluate opcode rng-bit-generator", "rng-bit-generator not evaluated: XLA's ThreeFry and Philox bit streams and their state updates, not cheap to match bit for bit"},
	"paired-jax-cpu/module_0203.jit__batched_chol.0006/module_0203.jit__batched_chol.cpu_after_optimizations.txt:jit__batched_chol":                {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax-cpu/module_0207.jit__batched_chol.0010/module_0207.jit__batched_chol.cpu_after_optimizations.txt:jit__batched_chol":                {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=2: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax-cpu/module_0209.jit__batched_chol.0000/module_0209.jit__batched_chol.cpu_after_optimizations.txt:jit__batched_chol":                {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax-cpu/module_0243.jit_fn.0007/module_0243.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 24.3 GiB: over maxReferencePlan"},
	"paired-jax-cpu/module_0245.jit_fn.0014/module_0245.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 24.8 GiB: over maxReferencePlan"},
	"paired-jax-cpu/module_0247.jit_fn.0011/module_0247.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 49.4 GiB: over maxReferencePlan"},
	"paired-jax-cpu/module_0255.jit_fn.0001/module_0255.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 70.1 GiB: over maxReferencePlan"},
	"paired-jax-cpu/module_0301.jit_fn.0009/module_0301.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 67.1 GiB: over maxReferencePlan"},
	"paired-jax-cpu/module_0413.jit_fn.0003/module_0413.jit_fn.cpu_after_optimizations.txt:jit_fn":                                                 {"over the reference run's limit", "plan of 70.1 GiB: over maxReferencePlan"},
	"paired-jax/module_0029.jit__ionic_gspace_jit.0039/module_0029.jit__ionic_gspace_jit.sm_8.0_gpu_after_optimizations.txt:jit__ionic_gspace_jit": {"cannot evaluate opcode custom-call", "custom-call custom-call.1.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_0073.jit_scan.0077/module_0073.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                        {"over the reference run's limit", "plan of 2.0 GiB: over maxReferencePlan"},
	"paired-jax/module_0077.jit_scan.0078/module_0077.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                        {"over the reference run's limit", "plan of 2.0 GiB: over maxReferencePlan"},
	"paired-jax/module_0081.jit_scan.0079/module_0081.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                        {"over the reference run's limit", "plan of 2.0 GiB: over maxReferencePlan"},
	"paired-jax/module_0093.jit_scan.0082/module_0093.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                        {"over the reference run's limit", "plan of 2.0 GiB: over maxReferencePlan"},
	"paired-jax/module_0111.jit__batched_chol.0055/module_0111.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=16: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0115.jit__batched_chol.0006/module_0115.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=16: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0117.jit__batched_chol.0070/module_0117.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0119.jit__batched_chol.0002/module_0119.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0137.jit__batched_chol.0071/module_0137.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"over the reference run's limit", "plan of 1.7 GiB: over maxReferencePlan"},
	"paired-jax/module_0137.jit__batched_chol.0098/module_0137.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0159.jit__chi_at_q_jit.0041/module_0159.jit__chi_at_q_jit.sm_8.0_gpu_after_optimizations.txt:jit__chi_at_q_jit":             {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"paired-jax/module_0159.jit__chi_at_q_jit.0042/module_0159.jit__chi_at_q_jit.sm_8.0_gpu_after_optimizations.txt:jit__chi_at_q_jit":             {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"paired-jax/module_0183.jit__chi_at_q_jit.0040/module_0183.jit__chi_at_q_jit.sm_8.0_gpu_after_optimizations.txt:jit__chi_at_q_jit":             {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"paired-jax/module_0211.jit__batched_chol.0001/module_0211.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=16: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0231.jit__batched_chol.0059/module_0231.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=8: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0245.jit__batched_chol.0000/module_0245.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0245.jit__batched_chol.0057/module_0245.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0335.jit__solve_w.0054/module_0335.jit__solve_w.sm_8.0_gpu_after_optimizations.txt:jit__solve_w":                            {"cannot evaluate opcode async-start", "async-start of an all-to-all: a collective across devices; the evaluator runs one"},
	"paired-jax/module_0381.jit__solve_w.0004/module_0381.jit__solve_w.sm_8.0_gpu_after_optimizations.txt:jit__solve_w":                            {"cannot evaluate opcode async-start", "async-start of an all-to-all: a collective across devices; the evaluator runs one"},
	"paired-jax/module_0425.jit__solve_w.0100/module_0425.jit__solve_w.sm_8.0_gpu_after_optimizations.txt:jit__solve_w":                            {"cannot evaluate opcode async-start", "async-start of an all-to-all: a collective across devices; the evaluator runs one"},
	"paired-jax/module_0473.jit__solve_w.0073/module_0473.jit__solve_w.sm_8.0_gpu_after_optimizations.txt:jit__solve_w":                            {"over the reference run's limit", "plan of 6.0 GiB: over maxReferencePlan"},
	"paired-jax/module_0481.jit__solve_w.0008/module_0481.jit__solve_w.sm_8.0_gpu_after_optimizations.txt:jit__solve_w":                            {"cannot evaluate opcode all-gather-start", "all-gather-start: a collective across devices; the evaluator runs one"},
	"paired-jax/module_0526.jit__sternheimer_core.0043/module_0526.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_0582.jit__sternheimer_core.0045/module_0582.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_0585.jit__batched_chol.0060/module_0585.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=8: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0592.jit__sternheimer_core.0047/module_0592.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_0593.jit__batched_chol.0058/module_0593.jit__batched_chol.sm_8.0_gpu_after_optimizations.txt:jit__batched_chol":             {"cannot evaluate opcode partition-id", "an SPMD program for num_partitions=4: the evaluator runs one device, and the program's collectives and custom-calls need them all"},
	"paired-jax/module_0623.jit_scatter.0052/module_0623.jit_scatter.sm_8.0_gpu_after_optimizations.txt:jit_scatter":                               {"over the reference run's limit", "plan of 686.6 MiB: over maxReferencePlan"},
	"paired-jax/module_1052.jit__sternheimer_core.0049/module_1052.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_1078.jit__sternheimer_core.0050/module_1078.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired-jax/module_1104.jit__sternheimer_core.0051/module_1104.jit__sternheimer_core.sm_8.0_gpu_after_optimizations.txt:jit__sternheimer_core": {"cannot evaluate opcode custom-call", "custom-call custom-call.15.0 (__cublas$gemm): a foreign function the evaluator has no semantics for"},
	"paired/module_0010.SyncTensorsGraph.636/module_0010.SyncTensorsGraph.636.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.636":             {"constant has no literal values", "constant constant_61_0 is elided ({...}) in the dump: its values are not there to evaluate"},
	"paired/module_0012.SyncTensorsGraph.147/module_0012.SyncTensorsGraph.147.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.147":             {"over the reference run's limit", "plan of 843.9 MiB: over maxReferencePlan"},
	"paired/module_0016.SyncTensorsGraph.219/module_0016.SyncTensorsGraph.219.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.219":             {"over the reference run's limit", "plan of 866.0 MiB: over maxReferencePlan"},
	"paired/module_0049.SyncTensorsGraph.293/module_0049.SyncTensorsGraph.293.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.293":             {"over the reference run's limit", "plan of 888.1 MiB: over maxReferencePlan"},
	"paired/module_0118.SyncTensorsGraph.441/module_0118.SyncTensorsGraph.441.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.441":             {"over the reference run's limit", "plan of 932.2 MiB: over maxReferencePlan"},
	"paired/module_0154.SyncTensorsGraph.515/module_0154.SyncTensorsGraph.515.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.515":             {"over the reference run's limit", "plan of 954.3 MiB: over maxReferencePlan"},
	"paired/module_0227.SyncTensorsGraph.663/module_0227.SyncTensorsGraph.663.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.663":             {"over the reference run's limit", "plan of 998.3 MiB: over maxReferencePlan"},
	"paired/module_0265.SyncTensorsGraph.737/module_0265.SyncTensorsGraph.737.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.737":             {"over the reference run's limit", "plan of 1020.4 MiB: over maxReferencePlan"},
	"paired/module_0304.SyncTensorsGraph.811/module_0304.SyncTensorsGraph.811.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.811":             {"over the reference run's limit", "plan of 1.0 GiB: over maxReferencePlan"},
	"paired/module_0385.SyncTensorsGraph.959/module_0385.SyncTensorsGraph.959.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.959":             {"over the reference run's limit", "plan of 1.1 GiB: over maxReferencePlan"},
	"paired/module_0427.SyncTensorsGraph.1033/module_0427.SyncTensorsGraph.1033.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1033":          {"over the reference run's limit", "plan of 1.1 GiB: over maxReferencePlan"},
	"paired/module_0470.SyncTensorsGraph.1107/module_0470.SyncTensorsGraph.1107.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1107":          {"over the reference run's limit", "plan of 1.1 GiB: over maxReferencePlan"},
	"paired/module_0559.SyncTensorsGraph.1255/module_0559.SyncTensorsGraph.1255.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1255":          {"over the reference run's limit", "plan of 1.1 GiB: over maxReferencePlan"},
	"paired/module_0605.SyncTensorsGraph.1329/module_0605.SyncTensorsGraph.1329.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1329":          {"over the reference run's limit", "plan of 1.2 GiB: over maxReferencePlan"},
	"paired/module_0652.SyncTensorsGraph.1403/module_0652.SyncTensorsGraph.1403.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1403":          {"over the reference run's limit", "plan of 1.2 GiB: over maxReferencePlan"},
	"paired/module_0749.SyncTensorsGraph.1551/module_0749.SyncTensorsGraph.1551.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1551":          {"over the reference run's limit", "plan of 1.2 GiB: over maxReferencePlan"},
	"paired/module_0799.SyncTensorsGraph.1625/module_0799.SyncTensorsGraph.1625.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1625":          {"over the reference run's limit", "plan of 1.3 GiB: over maxReferencePlan"},
	"paired/module_0850.SyncTensorsGraph.1699/module_0850.SyncTensorsGraph.1699.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1699":          {"over the reference run's limit", "plan of 1.3 GiB: over maxReferencePlan"},
	"paired/module_0955.SyncTensorsGraph.1847/module_0955.SyncTensorsGraph.1847.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1847":          {"over the reference run's limit", "plan of 1.3 GiB: over maxReferencePlan"},
	"paired/module_1009.SyncTensorsGraph.1921/module_1009.SyncTensorsGraph.1921.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1921":          {"over the reference run's limit", "plan of 1.3 GiB: over maxReferencePlan"},
	"paired/module_1064.SyncTensorsGraph.1995/module_1064.SyncTensorsGraph.1995.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.1995":          {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"paired/module_1177.SyncTensorsGraph.2143/module_1177.SyncTensorsGraph.2143.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.2143":          {"over the reference run's limit", "plan of 1.4 GiB: over maxReferencePlan"},
	"paired/simple_add.module_0000.SyncTensorsGraph.10/module_0000.SyncTensorsGraph.10.sm_8.0_gpu_after_optimizations.txt:SyncTensorsGraph.10":     {"cannot evaluate opcode custom-call", "custom-call custom-call.6.0 (XlaGpuSimpleAdd): a foreign function the evaluator has no semantics for"},
}

// referenceSlow holds the corpus modules too slow for the test's every
// run, keyed as moduleKeys yields them, each with what is known of it: the
// wall-clock time in which its planned and reference runs agreed (measured
// on a 2-core machine under a load average of about 8, two modules at a
// time), or that the reference run had not finished after 2 minutes, so
// that whether it agrees is not known. HLOMEM_REFERENCE_SLOW=1 runs them
// (then each must agree, or be on referenceAllowList, like any other).
var referenceSlow = map[string]string{
	"hlo/xla/backends__cpu__benchmarks__hlo__argsort_axis_1024x512_bf16.hlo:jit_argsort_axis":                                                                        "unfinished after 2 min: an argsort of 1024 rows of 512, the comparator evaluated per comparison",
	"hlo/xla/backends__cpu__benchmarks__hlo__in_place_dynamic_update_slice_fusion.hlo:jit_f":                                                                         "unfinished after 2 min",
	"hlo/xla/backends__cpu__benchmarks__hlo__jax.b380442861.hlo:jit_compute":                                                                                         "unfinished after 2 min",
	"hlo/xla/backends__cpu__benchmarks__hlo__sort_full_1024x4096_bf16.hlo:jit_sort_full":                                                                             "unfinished after 2 min: a sort of 1024 rows of 4096, the comparator evaluated per comparison",
	"paired-jax/module_0379.jit_scan.0064/module_0379.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                                          "agrees in 28s (85s under a load of 14)",
	"paired-jax/module_0429.jit_scan.0061/module_0429.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                                          "agrees in 27s",
	"paired-jax/module_0445.jit_scan.0063/module_0445.jit_scan.sm_8.0_gpu_after_optimizations.txt:jit_scan":                                                          "agrees in 26s",
	"paired-jax/module_0534.jit_scatter.0044/module_0534.jit_scatter.sm_8.0_gpu_after_optimizations.txt:jit_scatter":                                                 "agrees in 2m26s",
	"paired-jax/module_0588.jit_scatter.0046/module_0588.jit_scatter.sm_8.0_gpu_after_optimizations.txt:jit_scatter":                                                 "agrees in 10m9s (under a load of 10, beside another corpus test)",
	"paired-jax/module_0598.jit_scatter.0048/module_0598.jit_scatter.sm_8.0_gpu_after_optimizations.txt:jit_scatter":                                                 "agrees in 2m29s",
	"paired-jax/module_0677.jit__project_tau_onto_omega.0075/module_0677.jit__project_tau_onto_omega.sm_8.0_gpu_after_optimizations.txt:jit__project_tau_onto_omega": "agrees in 49s",
	"paired-jax/module_0691.jit__project_tau_onto_omega.0076/module_0691.jit__project_tau_onto_omega.sm_8.0_gpu_after_optimizations.txt:jit__project_tau_onto_omega": "agrees in 48s",
}
