// The leaf's outline on its card: a pointed oval from the stalk (v = 0) to the tip (v = 1),
// widest a little below the middle. Returns true for texels outside the blade, which are cut.
// Squared distances only: this runs for every leaf fragment.
bool outside_leaf(vec2 uv) {
    float v = uv.y;
    float x = uv.x - 0.5;
    // Half-width² = 0.25 · 4v(1 − v) · (1 − 0.3v)².
    float taper = 1.0 - 0.3 * v;
    return x * x > v * (1.0 - v) * taper * taper || v < 0.02;
}

// How much of this fragment the blade covers, 0 to 1: the outline's two conditions measured in
// pixels through their screen-space derivatives, so the edge is a ramp one pixel wide. Under
// multisampling with alpha-to-coverage this is the share of samples the leaf covers; at one
// sample, fragments under 0.5 are cut (the same outline as `outside_leaf`).
float leaf_coverage(vec2 uv) {
    float v = uv.y;
    float x = uv.x - 0.5;
    float taper = 1.0 - 0.3 * v;
    float side = x * x - v * (1.0 - v) * taper * taper;
    float stalk = 0.02 - v;
    float d = max(side / max(fwidth(side), 1e-7), stalk / max(fwidth(stalk), 1e-7));
    return clamp(0.5 - d, 0.0, 1.0);
}
