#version 460
// Face activity, the GPU twin of `FluidGrid::build_act` (paper 004 §2.2, the boundary
// conditions of Eq. 9-10): over the padded cell array, 1 for fluid cells, 0 for solid ones;
// a ghost cell beyond one side is 1 where that side is open (pressure 0 beyond it) and 0 where
// it is closed or an inflow. Ghosts beyond two sides at once touch no face; like the CPU they
// take the last side found. A face is active when both cells beside it have act = 1.
#include "wind_common.glsl"

void main() {
    ivec3 n = cells();
    ivec3 g = ivec3(gl_GlobalInvocationID);
    if (any(greaterThanEqual(g, n + 2))) {
        return;
    }
    ivec3 c = g - 1;
    int outside = -1;
    for (int a = 0; a < 3; a++) {
        if (c[a] < 0) {
            outside = 2 * a;
        } else if (c[a] >= n[a]) {
            outside = 2 * a + 1;
        }
    }
    float v;
    if (outside >= 0) {
        v = open_side(outside) ? 1.0 : 0.0;
    } else {
        v = solid[cell_index(c)] != 0u ? 0.0 : 1.0;
    }
    act[pad_index(c)] = v;
}
