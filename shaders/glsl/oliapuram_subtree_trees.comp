#version 460
// The breakage rule's sums (oliapuram_subtree.glsl) in one dispatch: workgroup t takes tree t,
// its levels from the deepest to its root, a workgroup barrier between levels (a segment's
// children lie in the next level). Tree t's segments of each level are contiguous in the level
// order (level 0 holds the roots in tree order, each level is grouped by parent in the
// parent's order), so its range at level d + 1 is the children of its range at level d:
// child_start[first]..child_start[last + 1]. counts.z: the forest's levels, at most
// SUBTREE_LEVELS (`OLIAPURAM_SUBTREE_LEVELS`); deeper forests take oliapuram_subtree.comp.
#include "oliapuram_common.glsl"
#include "oliapuram_subtree.glsl"

const uint SUBTREE_LEVELS = 1024u;
shared uvec2 ranges[SUBTREE_LEVELS];

void main() {
    uint t = gl_WorkGroupID.x;
    uint levels = min(pc.counts.z, SUBTREE_LEVELS);
    if (gl_LocalInvocationIndex == 0u) {
        uvec2 r = uvec2(t, t + 1u);
        ranges[0] = r;
        for (uint d = 1u; d < levels; d++) {
            r = r.x < r.y ? uvec2(segs[r.x].topo.y, segs[r.y - 1u].topo.z) : uvec2(0u);
            ranges[d] = r;
        }
    }
    memoryBarrierShared();
    barrier();
    for (uint d = levels; d > 0u; d--) {
        uvec2 r = ranges[d - 1u];
        for (uint v = r.x + gl_LocalInvocationIndex; v < r.y; v += gl_WorkGroupSize.x) {
            subtree_joint(v);
        }
        memoryBarrierBuffer();
        barrier();
    }
}
