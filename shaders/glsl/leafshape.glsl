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
