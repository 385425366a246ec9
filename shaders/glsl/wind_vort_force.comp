#version 460
// Vorticity confinement, second pass (Fedkiw, Stam & Jensen 2001, §3; `Confinement::apply` in
// sim/src/fluid/vorticity.rs): η = ∇|ω| by central differences, N = η / (|η| + (10⁻³ / h) |ω|)
// and the force f = ε h (N × ω) at each cell (h the smallest cell side, ε in `border.w`), into
// `centre` (free once advection is done).
#include "wind_common.glsl"

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    ivec3 n = cells();
    if (any(greaterThanEqual(c, n))) {
        return;
    }
    uint cell = cell_index(c);
    vec4 w = conf[cell];
    ivec3 lo = max(c - 1, ivec3(0));
    ivec3 hi = min(c + 1, n - 1);
    precise vec3 inv_span = 1.0 / (vec3(hi - lo) * pc.h.xyz);
    precise vec3 eta = vec3(
        (conf[cell_index(ivec3(hi.x, c.y, c.z))].w - conf[cell_index(ivec3(lo.x, c.y, c.z))].w) * inv_span.x,
        (conf[cell_index(ivec3(c.x, hi.y, c.z))].w - conf[cell_index(ivec3(c.x, lo.y, c.z))].w) * inv_span.y,
        (conf[cell_index(ivec3(c.x, c.y, hi.z))].w - conf[cell_index(ivec3(c.x, c.y, lo.z))].w) * inv_span.z);
    float hmin = min(min(pc.h.x, pc.h.y), pc.h.z);
    precise float len = sqrt(eta.x * eta.x + eta.y * eta.y + eta.z * eta.z);
    precise float soften = 1e-3 / hmin;
    precise float denom = len + soften * w.w;
    if (!(denom > 0.0)) {
        centre[cell] = vec4(0.0);
        return;
    }
    precise float s = pc.border.w * hmin / denom;
    precise vec3 nv = eta * s;
    precise vec3 f = vec3(nv.y * w.z - nv.z * w.y, nv.z * w.x - nv.x * w.z, nv.x * w.y - nv.y * w.x);
    centre[cell] = vec4(f, 0.0);
}
