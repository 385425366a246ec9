#version 460
// Vorticity confinement, first pass (Fedkiw, Stam & Jensen 2001, §3; `Confinement::apply` in
// sim/src/fluid/vorticity.rs): the vorticity ω = ∇ × c of the cell-centred velocity c at each
// fluid cell, by central differences (one-sided at the domain's sides), and |ω|, into `conf`;
// 0 at solid cells. Reads the advected and forced field `vel_out`.
#include "wind_common.glsl"

// Cell-centred component a of cell c.
float cc(int a, ivec3 c) {
    ivec3 n = cells();
    uint f = face_index(a, c);
    uint s = a == 0 ? 1u : (a == 1 ? uint(n.x) : uint(n.x * n.y));
    precise float m = 0.5 * (vel_out[f] + vel_out[f + s]);
    return m;
}

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    ivec3 n = cells();
    if (any(greaterThanEqual(c, n))) {
        return;
    }
    uint cell = cell_index(c);
    if (act[pad_index(c)] == 0.0) {
        conf[cell] = vec4(0.0);
        return;
    }
    ivec3 lo = max(c - 1, ivec3(0));
    ivec3 hi = min(c + 1, n - 1);
    precise vec3 inv_span = 1.0 / (vec3(hi - lo) * pc.h.xyz);
    precise float dwdy = (cc(2, ivec3(c.x, hi.y, c.z)) - cc(2, ivec3(c.x, lo.y, c.z))) * inv_span.y;
    precise float dvdz = (cc(1, ivec3(c.x, c.y, hi.z)) - cc(1, ivec3(c.x, c.y, lo.z))) * inv_span.z;
    precise float dudz = (cc(0, ivec3(c.x, c.y, hi.z)) - cc(0, ivec3(c.x, c.y, lo.z))) * inv_span.z;
    precise float dwdx = (cc(2, ivec3(hi.x, c.y, c.z)) - cc(2, ivec3(lo.x, c.y, c.z))) * inv_span.x;
    precise float dvdx = (cc(1, ivec3(hi.x, c.y, c.z)) - cc(1, ivec3(lo.x, c.y, c.z))) * inv_span.x;
    precise float dudy = (cc(0, ivec3(c.x, hi.y, c.z)) - cc(0, ivec3(c.x, lo.y, c.z))) * inv_span.y;
    precise vec3 w = vec3(dwdy - dvdz, dudz - dwdx, dvdx - dudy);
    precise float len = sqrt(w.x * w.x + w.y * w.y + w.z * w.z);
    conf[cell] = vec4(w, len);
}
