#version 460
// External force (paper 004, Eq. 5; §2.3, first method): each Gaussian wind ball adds
// v += dt · a · exp(−|x − c|² / r²) to the active faces within 3r of its (jittered) centre.
// The reach test is the CPU's: the face row (j, k) within 3r in y and z, then the faces of
// that row inside the chord, so both solvers touch the same faces. Updates `vel_out`.
#include "wind_common.glsl"

void main() {
    // Dispatched over the slabs some ball reaches only, from slab `sides.z`.
    ivec3 f = ivec3(gl_GlobalInvocationID) + ivec3(0, 0, int(pc.sides.z));
    uint nb = pc.n.w;
    float dt = pc.h.w;
    for (int a = 0; a < 3; a++) {
        ivec3 fd = face_dims(a);
        if (any(greaterThanEqual(f, fd)) || f.z < k_lo[a] || f.z > k_hi[a]) {
            continue;
        }
        vec3 off = vec3(0.5);
        off[a] = 0.0;
        uint cr = pad_index(f);
        uint cl = cr - pad_stride(a);
        float live = act[cl] * act[cr];
        uint idx = face_index(a, f);
        precise float value = vel_out[idx];
        precise float y = pc.origin.y + (float(f.y) + off.y) * pc.h.y;
        precise float z = pc.origin.z + (float(f.z) + off.z) * pc.h.z;
        precise float x = pc.origin.x + (float(f.x) + off.x) * pc.h.x;
        for (uint b = 0u; b < nb; b++) {
            vec3 c = balls[b].centre_reach2.xyz;
            float reach2 = balls[b].centre_reach2.w;
            precise float dyz = (y - c.y) * (y - c.y) + (z - c.z) * (z - c.z);
            if (dyz > reach2) {
                continue;
            }
            precise float half_chord = sqrt(reach2 - dyz);
            precise float i0 = max(ceil((c.x - half_chord - pc.origin.x) / pc.h.x - off.x), 0.0);
            precise float i1 = floor((c.x + half_chord - pc.origin.x) / pc.h.x - off.x);
            if (i1 < 0.0) {
                continue;
            }
            i1 = min(i1, float(fd.x - 1));
            float fi = float(f.x);
            if (fi < i0 || fi > i1) {
                continue;
            }
            precise float d2 = (x - c.x) * (x - c.x) + dyz;
            value += live * dt * balls[b].accel_inv_r2[a] * exp(-d2 * balls[b].accel_inv_r2.w);
        }
        vel_out[idx] = value;
    }
}
