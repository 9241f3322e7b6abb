// Package fit answers "will this program fit on this device, and if not,
// which of the user's own levers makes it fit, at what cost".
//
// Analyze plans the module (compile.Compile), runs the plan on the GPU
// client model as hlomem run --device does (gpu.NewClient, fragmentation
// included) and gives the verdict: fits with N bytes to spare, or short by
// N bytes, naming the peak step and what is live there. Then each lever
// is measured by its own re-plan and re-run on the device model:
//
//   - allocator (allocator.go): JAX's client settings, the smallest
//     XLA_PYTHON_CLIENT_MEM_FRACTION that fits, preallocation off, the
//     platform allocator;
//   - donation (Donate, donate.go) and host offload (Offload,
//     offload.go), written by other engineers against the contract;
//   - remat (remat.go): the remat pass toward the device limit, the
//     recomputed scopes and the jax.checkpoint policy;
//   - jit (jit.go): for a module XLA has not compiled, what running op by
//     op costs beside the jitted run.
//
// Combine (combine.go) applies the levers cumulatively, cheapest first,
// until the program fits.
package fit
