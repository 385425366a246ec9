#version 460
// First pass of a dot product over a level's cells: each workgroup's sum of x·y (x at opnd.x,
// y at opnd.y) into `partial`, by workgroup index. wind_mg_scalar.comp adds them up.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

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
    group_sum(v);
}
