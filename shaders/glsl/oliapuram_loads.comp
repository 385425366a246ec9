#version 460
// The breakage rule's first pass (oliapuram_subtree.glsl): every segment's own load and its
// leaves', summed per segment, one invocation per segment (level index), after the pose
// kernel; the sums over the subtrees follow (oliapuram_subtree_trees.comp or
// oliapuram_subtree.comp).
#include "oliapuram_common.glsl"
#include "oliapuram_subtree.glsl"

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v < pc.counts.x) {
        own_loads(v);
    }
}
