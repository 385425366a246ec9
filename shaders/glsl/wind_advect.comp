#version 460
// Semi-Lagrangian advection (paper 004, Eq. 4; §2.4 "Advection"): every face takes the value
// its component had at x − dt·v(x), sampled trilinearly from the 8 nearest faces of that
// component's own staggered grid. One thread per face of the component `COMPONENT`.
// Reads `vel_in` and `centre` (wind_centre.comp), writes `vel_out`.
#include "wind_common.glsl"

#define FLUID_FIELD vel_in
#include "fluid_trilinear.glsl"

// Trilinear sample of component a at grid coordinates g (position / h), with the coordinates
// clamped into the component's staggered grid (`sample_component` on the CPU's advection).
float sample_component(int a, vec3 g) {
    vec3 c = g - vec3(a == 0 ? 0.0 : 0.5, a == 1 ? 0.0 : 0.5, a == 2 ? 0.0 : 0.5);
    return fluid_trilinear(comp_base(a), face_dims(a), c);
}

// The new value of face f of component a (`Advect::face` on the CPU).
float advect_face(int a, ivec3 f) {
    ivec3 n = cells();
    uint cr = pad_index(f);
    uint cl = cr - pad_stride(a);
    if (act[cl] * act[cr] == 0.0) {
        // Prescribed: the border wind on an inflow side, zero on walls and beside solids.
        int side = f[a] == 0 ? 2 * a : (f[a] == n[a] ? 2 * a + 1 : -1);
        return side >= 0 && inflow(side) ? pc.border[a] : 0.0;
    }
    // Velocity at the face: its own component, the others the mean of the cell-centred
    // velocities of the cells beside it (of the one cell on a domain side).
    ivec3 lo = f;
    ivec3 hi = f;
    if (f[a] > 0) {
        lo[a] -= 1;
    }
    if (hi[a] == n[a]) {
        hi[a] -= 1;
    }
    vec3 vl = centre[cell_index(lo)].xyz;
    vec3 vh = centre[cell_index(hi)].xyz;
    vec3 v = 0.5 * (vl + vh);
    v[a] = vel_in[face_index(a, f)];
    vec3 g;
    float dt = pc.h.w;
    for (int b = 0; b < 3; b++) {
        float off = b == a ? 0.0 : 0.5;
        precise float x = float(f[b]) + off - dt * v[b] / pc.h[b];
        g[b] = x;
    }
    // Beyond an inflow side the air is the border wind (sides in the order x−, x+, y−, y+,
    // z−, z+).
    for (int b = 0; b < 3; b++) {
        if ((g[b] < 0.0 && inflow(2 * b)) || (g[b] > float(n[b]) && inflow(2 * b + 1))) {
            return pc.border[a];
        }
    }
    return sample_component(a, g);
}

// The component this pipeline advects (one dispatch per component: with the component a
// constant, the indexing by component compiles to plain loads).
layout(constant_id = 0) const int COMPONENT = 0;

void main() {
    ivec3 f = ivec3(gl_GlobalInvocationID);
    if (all(lessThan(f, face_dims(COMPONENT)))) {
        vel_out[face_index(COMPONENT, f)] = advect_face(COMPONENT, f);
    }
}
