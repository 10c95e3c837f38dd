// Grid indexing shared by every family (included with `// #include "lib/grid.wgsl"`).
// Needs the includer's `override WG: u32` (threads per workgroup, 1-D).
//
// A grid of more than 65535 workgroups is folded into y by Device.grid (src/gpu/device.ts),
// so a kernel recovers its flat index from both dimensions.

// Flat thread index of a 1-D kernel: one thread per element.
fn index(g: vec3u, nw: vec3u) -> u32 { return g.y * nw.x * WG + g.x; }

// Flat workgroup index (g is the workgroup id): one workgroup per row or output.
fn group_index(g: vec3u, nw: vec3u) -> u32 { return g.y * nw.x + g.x; }
