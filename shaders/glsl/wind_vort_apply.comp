#version 460
// Vorticity confinement, last pass (`Confinement::apply` in sim/src/fluid/vorticity.rs): each
// active face gets dt times the mean of its two cells' force component along its axis (the
// interior cell's alone on a side of the domain). Updates `vel_out`.
#include "wind_common.glsl"

void main() {
    ivec3 f = ivec3(gl_GlobalInvocationID);
    ivec3 n = cells();
    float dt = pc.h.w;
    for (int a = 0; a < 3; a++) {
        ivec3 fd = face_dims(a);
        if (any(greaterThanEqual(f, fd))) {
            continue;
        }
        uint cr = pad_index(f);
        uint cl = cr - pad_stride(a);
        if (act[cl] * act[cr] == 0.0) {
            continue;
        }
        ivec3 below = f;
        below[a] -= 1;
        bool has_below = f[a] > 0;
        bool has_above = f[a] < n[a];
        precise float fa = 0.0;
        if (has_below && has_above) {
            fa = 0.5 * (centre[cell_index(below)][a] + centre[cell_index(f)][a]);
        } else if (has_below) {
            fa = centre[cell_index(below)][a];
        } else if (has_above) {
            fa = centre[cell_index(f)][a];
        }
        uint idx = face_index(a, f);
        precise float value = vel_out[idx] + dt * fa;
        vel_out[idx] = value;
    }
}
