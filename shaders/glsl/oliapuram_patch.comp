#version 460
// The broken pieces drawn where the debris is: after the pose kernel, invocation k writes entry
// k of `patches` (the pose of a piece's segment or leaf, stepped on the CPU) into the renderer's
// pose, over the frozen rest pose the pose kernel wrote there. counts.z: entries.
#include "oliapuram_common.glsl"

void main() {
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.counts.z) {
        return;
    }
    Patch e = patches[k];
    pose[e.slot.x] = e.p;
    pose[e.slot.y] = e.q;
}
