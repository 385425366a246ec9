#version 460
// The breakage rule's sums (oliapuram_subtree.glsl), one dispatch per depth level from the
// deepest to the roots: invocation k takes segment counts.z + k of the level (counts.w long),
// whose children, in the next level, the dispatch before summed. For forests deeper than
// oliapuram_subtree_trees.comp holds.
#include "oliapuram_common.glsl"
#include "oliapuram_subtree.glsl"

void main() {
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.counts.w) {
        return;
    }
    subtree_joint(pc.counts.z + k);
}
