#version 460
// First pass of a dot product over a level's cells: each workgroup's sum of x·y (x at opnd.x,
// y at opnd.y) into `partial`, by workgroup index. wind_mg_scalar.comp adds them up.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

const uint GROUP = 16u * 4u * 8u;
shared float part[GROUP];

void main() {
    if (skip()) {
        // The same for every invocation (one value read by all), so no barrier is left waiting.
        return;
    }
    ivec3 c = ivec3(gl_GlobalInvocationID);
    float v = 0.0;
    if (inside(c, pc.n.xyz)) {
        uint i = pad_of(c, pc.n.xyz);
        v = pool[pc.opnd.x + i] * pool[pc.opnd.y + i];
    }
    uint li = gl_LocalInvocationIndex;
    part[li] = v;
    barrier();
    for (uint h = GROUP / 2u; h > 0u; h >>= 1u) {
        if (li < h) {
            part[li] += part[li + h];
        }
        barrier();
    }
    if (li == 0u) {
        uvec3 g = gl_WorkGroupID;
        uvec3 ng = gl_NumWorkGroups;
        partial[g.x + ng.x * (g.y + ng.y * g.z)] = part[0];
    }
}
