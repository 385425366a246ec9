#version 460
// Projection (paper 004, Eq. 7): v −= (p⁺ − p⁻) / h on the active faces, leaving the field
// divergence-free up to the pressure equation's residual. Reads `p_in`, updates `vel_out`.
#include "wind_common.glsl"

void main() {
    ivec3 f = ivec3(gl_GlobalInvocationID);
    for (int a = 0; a < 3; a++) {
        if (any(greaterThanEqual(f, face_dims(a)))) {
            continue;
        }
        uint cr = pad_index(f);
        uint cl = cr - pad_stride(a);
        uint idx = face_index(a, f);
        precise float r = vel_out[idx] - act[cl] * act[cr] * (p_in[cr] - p_in[cl]) * pc.inv_h[a];
        vel_out[idx] = r;
    }
}
