#version 460
// A level's operator from its activity (`Level::new` in sim/src/fluid/pressure.rs): at fluid
// cells, fluid = 1 and diag = Σ over active faces of 1/h² (paper 004, Eq. 9), inverted for the
// smoother (0 where there is no active face); all 0 at solid cells.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    if (!inside(c, pc.n.xyz)) {
        return;
    }
    uint i = pad_of(c, pc.n.xyz);
    float fl = 0.0;
    float dg = 0.0;
    float inv = 0.0;
    if (pool[arr(ACT) + i] != 0.0) {
        uint st[3] = uint[3](1u, pc.n.x + 2u, (pc.n.x + 2u) * (pc.n.y + 2u));
        precise float sum = 0.0;
        for (int a = 0; a < 3; a++) {
            sum += pc.inv_h2[a] * (pool[arr(ACT) + i - st[a]] + pool[arr(ACT) + i + st[a]]);
        }
        fl = 1.0;
        dg = sum;
        inv = sum > 0.0 ? 1.0 / sum : 0.0;
    }
    pool[arr(FLUID) + i] = fl;
    pool[arr(DIAG) + i] = dg;
    pool[arr(INV) + i] = inv;
}
