// The demo's 3-D drift view (demo/drift_view.ts): lines for trails and the reference
// cube, camera-facing discs for rank and consensus points. Colours arrive straight
// (not premultiplied); the fragment stages premultiply for the blend state
// (src = one, dst = one-minus-src-alpha).

struct Camera {
  view_proj: mat4x4f,
  // Canvas size in device pixels.
  viewport: vec2f,
  // Device pixels per CSS pixel (point sizes are given in CSS pixels).
  pixel_ratio: f32,
  _pad: f32,
}
@group(0) @binding(0) var<uniform> cam: Camera;

struct LineOut {
  @builtin(position) pos: vec4f,
  @location(0) color: vec4f,
}

@vertex
fn line_vs(@location(0) p: vec3f, @location(1) color: vec4f) -> LineOut {
  var out: LineOut;
  out.pos = cam.view_proj * vec4f(p, 1.0);
  out.color = color;
  return out;
}

@fragment
fn line_fs(in: LineOut) -> @location(0) vec4f {
  return vec4f(in.color.rgb * in.color.a, in.color.a);
}

struct PointOut {
  @builtin(position) pos: vec4f,
  @location(0) color: vec4f,
  // Position inside the disc, [-1, 1]².
  @location(1) uv: vec2f,
}

// Two triangles covering the square [-1, 1]².
const CORNERS = array<vec2f, 6>(
  vec2f(-1.0, -1.0), vec2f(1.0, -1.0), vec2f(1.0, 1.0),
  vec2f(-1.0, -1.0), vec2f(1.0, 1.0), vec2f(-1.0, 1.0),
);

@vertex
fn point_vs(
  @builtin(vertex_index) vi: u32,
  @location(0) center: vec3f,
  @location(1) color: vec4f,
  @location(2) size: f32,
) -> PointOut {
  let corner = CORNERS[vi];
  let c = cam.view_proj * vec4f(center, 1.0);
  // A fixed size on screen: offset in clip space, scaled by w so the divide undoes it.
  let half_px = 0.5 * size * cam.pixel_ratio;
  let offset = corner * half_px * 2.0 / cam.viewport * c.w;
  var out: PointOut;
  out.pos = vec4f(c.xy + offset, c.z, c.w);
  out.color = color;
  out.uv = corner;
  return out;
}

@fragment
fn point_fs(in: PointOut) -> @location(0) vec4f {
  let r = length(in.uv);
  if (r > 1.0) {
    discard;
  }
  // A soft edge and a darker rim, so overlapping discs stay apart.
  let edge = 1.0 - smoothstep(0.85, 1.0, r);
  let rim = select(1.0, 0.55, r > 0.7);
  let a = in.color.a * edge;
  return vec4f(in.color.rgb * rim * a, a);
}
