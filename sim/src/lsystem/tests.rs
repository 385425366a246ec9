//! Unit tests of `lsystem`, beside it so that `lsystem.rs` holds the code alone.

use super::*;

/// (length, number of `F`, deepest bracket nesting) of a string, counted here independently
/// of the module's own code.
fn stats(s: &str) -> (usize, usize, usize) {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in s.chars() {
        match c {
            '[' => {
                depth += 1;
                max = max.max(depth);
            }
            ']' => depth -= 1,
            _ => {}
        }
    }
    (s.len(), s.matches('F').count(), max)
}

fn check_counts(name: &str, expected: &[(usize, usize, usize)]) {
    let ls = preset(name).unwrap();
    for (n, &want) in expected.iter().enumerate() {
        let s = ls.expand(n as u32, 0).unwrap();
        assert_eq!(stats(&s), want, "{name} after {n} iterations");
        // Deterministic systems: the count-based bound is the exact length.
        if n > 0 {
            assert_eq!(ls.min_lengths(n as u32)[n - 1], want.0 as u64, "{name} bound at {n}");
        }
    }
}

// Hand derivations. Notation: len(n), F(n) = number of F, D(n) = deepest bracket nesting after
// n rewritings; symbols without a rule (+ - [ ] and X before it is rewritten) copy themselves.

#[test]
fn abop_1_24a_counts() {
    // F -> F[+F]F[-F]F: 11 symbols, 5 of them F. Each F adds 10 symbols per rewriting:
    // F(n) = 5^n, len(n) = len(n-1) + 10 F(n-1) = (5^(n+1) - 3) / 2.
    // The successor nests one bracket level, applied inside the deepest F: D(n) = n.
    check_counts(
        "abop-1.24a",
        &[(1, 1, 0), (11, 5, 1), (61, 25, 2), (311, 125, 3), (1561, 625, 4)],
    );
}

#[test]
fn abop_1_24b_counts() {
    // F -> F[+F]F[-F][F]: 13 symbols, 5 F. F(n) = 5^n, len(n) = len(n-1) + 12 F(n-1) = 3·5^n - 2.
    // D(n) = n.
    check_counts(
        "abop-1.24b",
        &[(1, 1, 0), (13, 5, 1), (73, 25, 2), (373, 125, 3), (1873, 625, 4)],
    );
}

#[test]
fn abop_1_24c_counts() {
    // F -> FF-[-F+F+F]+[+F-F-F]: 20 symbols, 8 F. F(n) = 8^n,
    // len(n) = len(n-1) + 19 F(n-1) = 1 + 19 (8^n - 1) / 7: 1, 20, 172, 1388, 11116. D(n) = n.
    check_counts(
        "abop-1.24c",
        &[(1, 1, 0), (20, 8, 1), (172, 64, 2), (1388, 512, 3), (11116, 4096, 4)],
    );
}

#[test]
fn abop_1_24d_counts() {
    // X -> F[+X]F[-X]+X (12 symbols: 2 F, 3 X, 7 others), F -> FF.
    // X(n) = 3^n; F(n) = 2 F(n-1) + 2 X(n-1): 0, 2, 10, 38, 130;
    // others O(n) = O(n-1) + 7 X(n-1): 0, 7, 28, 91, 280; len = F + X + O: 1, 12, 47, 156, 491.
    // D(n) = n (the bracketed X are one level deeper than their parent X).
    check_counts(
        "abop-1.24d",
        &[(1, 0, 0), (12, 2, 1), (47, 10, 2), (156, 38, 3), (491, 130, 4)],
    );
}

#[test]
fn abop_1_24e_counts() {
    // X -> F[+X][-X]FX (11 symbols: 2 F, 3 X, 6 others), F -> FF.
    // X(n) = 3^n; F(n) = 2 F(n-1) + 2 X(n-1): 0, 2, 10, 38, 130;
    // O(n) = O(n-1) + 6 X(n-1): 0, 6, 24, 78, 240; len: 1, 11, 43, 143, 451. D(n) = n.
    check_counts(
        "abop-1.24e",
        &[(1, 0, 0), (11, 2, 1), (43, 10, 2), (143, 38, 3), (451, 130, 4)],
    );
}

#[test]
fn abop_1_24f_counts() {
    // X -> F-[[X]+X]+F[+FX]-X (18 symbols: 3 F, 4 X, 11 others), F -> FF.
    // X(n) = 4^n; F(n) = 2 F(n-1) + 3 X(n-1): 0, 3, 18, 84, 360;
    // O(n) = O(n-1) + 11 X(n-1): 0, 11, 55, 231, 935; len: 1, 18, 89, 379, 1551.
    // `[[X]` puts an X two levels deeper than its parent: D(n) = 2n.
    check_counts(
        "abop-1.24f",
        &[(1, 0, 0), (18, 3, 2), (89, 18, 4), (379, 84, 6), (1551, 360, 8)],
    );
}

#[test]
fn abop_presets_have_published_settings_and_draw_every_f() {
    // (name, axiom, angle, iterations) from ABOP p. 25, Figure 1.24.
    let published = [
        ("abop-1.24a", "F", 25.7, 5),
        ("abop-1.24b", "F", 20.0, 5),
        ("abop-1.24c", "F", 22.5, 4),
        ("abop-1.24d", "X", 20.0, 7),
        ("abop-1.24e", "X", 25.7, 7),
        ("abop-1.24f", "X", 22.5, 5),
    ];
    for (name, axiom, angle, n) in published {
        let ls = preset(name).unwrap();
        assert_eq!(
            (ls.axiom.as_str(), ls.angle_deg, ls.iterations),
            (axiom, angle, n),
            "{name}"
        );
        let g = grow(&ls, 3, 0, &mut |_| {}).unwrap();
        let s = ls.expand(3, 0).unwrap();
        assert_eq!(g.skeleton.segments.len(), stats(&s).1, "{name}: one segment per F");
        assert_eq!(g.symbols, s.len());
        assert_eq!(g.invisible_steps, 0);
    }
}

#[test]
fn stochastic_choice_follows_weights() {
    let text = format!("axiom = {}\nX -> (2) A | (3) B | (5) C\n", "X".repeat(100));
    let ls = LSystem::parse(&text, "t").unwrap();
    let w: Vec<f64> = ls.rules[0].successors.iter().map(|s| s.weight).collect();
    assert!((w[0] - 0.2).abs() < 1e-12 && (w[1] - 0.3).abs() < 1e-12 && (w[2] - 0.5).abs() < 1e-12);
    let mut counts = [0usize; 3];
    for seed in 0..2000 {
        for c in ls.expand(1, seed).unwrap().chars() {
            counts[(c as u8 - b'A') as usize] += 1;
        }
    }
    let total = counts.iter().sum::<usize>() as f64;
    assert_eq!(total, 200_000.0);
    // The standard deviation of a frequency over 200,000 draws is at most 0.0011; allow 4.5.
    for (i, want) in [0.2, 0.3, 0.5].iter().enumerate() {
        let got = counts[i] as f64 / total;
        assert!((got - want).abs() < 0.005, "alternative {i}: {got} vs {want}");
    }
}

#[test]
fn deterministic_for_a_seed() {
    let ls = preset("oliapuram").unwrap();
    let a = grow(&ls, 5, 42, &mut |_| {}).unwrap();
    let b = grow(&ls, 5, 42, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    assert_eq!(ls.expand(5, 42).unwrap(), ls.expand(5, 42).unwrap());
    let c = grow(&ls, 5, 43, &mut |_| {}).unwrap();
    assert_ne!(a.skeleton, c.skeleton);
}

fn unit_system(angle: f32) -> LSystem {
    let mut ls = LSystem::new("t", "F");
    ls.angle_deg = angle;
    ls.length = 1.0;
    ls
}

fn tips(ls: &LSystem, s: &str) -> Vec<Vec3> {
    interpret(ls, s, 0)
        .unwrap()
        .skeleton
        .segments
        .iter()
        .map(|s| s.tip)
        .collect()
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).length() < 1e-5
}

#[test]
fn turtle_right_angle() {
    let ls = unit_system(90.0);
    let g = interpret(&ls, "F+F", 0).unwrap();
    let s = &g.skeleton.segments;
    assert_eq!(s.len(), 2);
    assert!(close(s[0].base, Vec3::ZERO) && close(s[0].tip, Vec3::Y));
    assert_eq!(s[1].parent, Some(0));
    assert_eq!(s[1].base, s[0].tip);
    // `+` turns left: from +y towards L = -x.
    assert!(close(s[1].tip, Vec3::new(-1.0, 1.0, 0.0)), "{:?}", s[1].tip);
    let d0 = s[0].tip - s[0].base;
    let d1 = s[1].tip - s[1].base;
    assert!(d0.dot(d1).abs() < 1e-6, "right angle");
    assert!(close(tips(&ls, "F-F")[1], Vec3::new(1.0, 1.0, 0.0)));
}

#[test]
fn turtle_3d_rotations() {
    let ls = unit_system(90.0);
    // Pitch down turns H towards -U = -z; pitch up towards +z.
    assert!(close(tips(&ls, "F&F")[1], Vec3::new(0.0, 1.0, -1.0)));
    assert!(close(tips(&ls, "F^F")[1], Vec3::new(0.0, 1.0, 1.0)));
    // Roll about H, then turn left: L has rolled from -x to +z (`\`) or -z (`/`).
    assert!(close(tips(&ls, "F\\+F")[1], Vec3::new(0.0, 1.0, 1.0)));
    assert!(close(tips(&ls, "F/+F")[1], Vec3::new(0.0, 1.0, -1.0)));
    // Turn around: straight back down.
    assert!(close(tips(&ls, "F|F")[1], Vec3::ZERO));
    // A roll alone does not move the heading.
    assert!(close(tips(&ls, "F\\F")[1], Vec3::new(0.0, 2.0, 0.0)));
}

#[test]
fn brackets_restore_state_and_start_child_stems() {
    let ls = unit_system(90.0);
    let g = interpret(&ls, "F[+F[-F]]F[-F]F", 0).unwrap();
    let s = &g.skeleton.segments;
    assert_eq!(s.len(), 6);
    let parents: Vec<Option<u32>> = s.iter().map(|x| x.parent).collect();
    assert_eq!(parents, vec![None, Some(0), Some(1), Some(0), Some(3), Some(3)]);
    assert!(close(s[1].tip, Vec3::new(-1.0, 1.0, 0.0)));
    assert!(close(s[2].tip, Vec3::new(-1.0, 2.0, 0.0)));
    // After `]` the turtle is back at the tip of segment 0, heading up.
    assert!(close(s[3].tip, Vec3::new(0.0, 2.0, 0.0)));
    assert!(close(s[4].tip, Vec3::new(1.0, 2.0, 0.0)));
    assert!(close(s[5].tip, Vec3::new(0.0, 3.0, 0.0)));
    assert_eq!(g.max_depth, 2);
    g.skeleton.validate().unwrap();
}

#[test]
fn f_moves_are_merged_into_the_next_segment() {
    let ls = unit_system(90.0);
    let g = interpret(&ls, "FfF[fF]", 0).unwrap();
    let s = &g.skeleton.segments;
    assert_eq!(s.len(), 3);
    assert_eq!(g.invisible_steps, 2);
    // The second segment starts at the first one's tip and spans the move and its own step.
    assert_eq!(s[1].base, s[0].tip);
    assert!(close(s[1].tip, Vec3::new(0.0, 3.0, 0.0)));
    assert_eq!(s[2].parent, Some(1));
    assert!(close(s[2].tip, Vec3::new(0.0, 5.0, 0.0)));
    // A move that brings the turtle back makes the next step too short: no segment.
    let g = interpret(&ls, "Ff||fF", 0).unwrap();
    assert_eq!(g.skeleton.segments.len(), 2);
    let g = interpret(&ls, "Ff|F", 0).unwrap();
    assert_eq!(g.skeleton.segments.len(), 1);
    assert_eq!(g.invisible_steps, 2);
}

#[test]
fn length_and_angle_scale_with_bracket_depth() {
    let mut ls = unit_system(40.0);
    ls.length_scale = 0.5;
    ls.angle_scale = 0.5;
    let g = interpret(&ls, "F[+F[+F]]", 0).unwrap();
    let s = &g.skeleton.segments;
    assert!((s[1].length() - 0.5).abs() < 1e-6);
    assert!((s[2].length() - 0.25).abs() < 1e-6);
    // Depth 1 turns by 20°, depth 2 by 10° more: 30° from vertical.
    let d2 = (s[2].tip - s[2].base).normalize();
    assert!((d2.dot(Vec3::Y) - 30f32.to_radians().cos()).abs() < 1e-5);
    let d1 = (s[1].tip - s[1].base).normalize();
    assert!((d1.dot(Vec3::Y) - 20f32.to_radians().cos()).abs() < 1e-5);
}

/// Checks the pipe rule at every segment with children and the twig radius at every tip.
fn check_pipe(sk: &Skeleton, twig: Option<f32>) {
    let n = sk.segments.len();
    let mut sum = vec![0.0f64; n];
    let mut has = vec![false; n];
    for s in &sk.segments {
        if let Some(p) = s.parent {
            sum[p as usize] += (s.radius_base as f64).powi(2);
            has[p as usize] = true;
        }
    }
    for (i, s) in sk.segments.iter().enumerate() {
        if has[i] {
            let before = (s.radius_tip as f64).powi(2);
            assert!(
                (before - sum[i]).abs() <= 1e-6 * before,
                "fork at {i}: {before} vs {}",
                sum[i]
            );
        } else if let Some(t) = twig {
            assert!((s.radius_tip - t).abs() <= 1e-6 * t, "tip {i}: {}", s.radius_tip);
        }
        assert!(s.radius_base >= s.radius_tip, "segment {i} widens towards its tip");
    }
}

#[test]
fn presets_grow_valid_trees_with_pipe_radii() {
    for name in preset_names() {
        let ls = preset(name).unwrap();
        let mut last = -1.0f32;
        let g = grow(&ls, ls.iterations, 7, &mut |f| {
            assert!(f >= last && (0.0..=1.0).contains(&f), "progress {f} after {last}");
            last = f;
        })
        .unwrap();
        assert_eq!(last, 1.0);
        g.skeleton.validate().unwrap();
        check_pipe(&g.skeleton, Some(ls.twig_radius));
        let h = g.skeleton.height();
        assert!((3.0..12.0).contains(&h), "{name}: height {h}");
        assert!(!g.skeleton.leaves.is_empty(), "{name} has leaves");
    }
}

#[test]
fn width_hint_and_bang() {
    let mut ls = unit_system(30.0);
    ls.width = Some(0.2);
    let g = interpret(&ls, "FF[+F[-F]F]F[-F]F", 0).unwrap();
    assert!((g.skeleton.segments[0].radius_base - 0.2).abs() < 1e-6);
    check_pipe(&g.skeleton, None);
    // `!` thins the twigs after it, inside its branch only.
    let ls = unit_system(30.0);
    let g = interpret(&ls, "F[+!F]F", 0).unwrap();
    let s = &g.skeleton.segments;
    assert!((s[1].radius_tip - ls.twig_radius * ls.width_decrement).abs() < 1e-7);
    assert!((s[2].radius_tip - ls.twig_radius).abs() < 1e-7);
    check_pipe(&g.skeleton, None);
    // However many `!`, radii stay positive.
    let many = format!("F{}F", "!".repeat(5000));
    interpret(&ls, &many, 0).unwrap().skeleton.validate().unwrap();
}

#[test]
fn leaves_from_symbols_and_at_tips() {
    let mut ls = unit_system(90.0);
    ls.leaves_at_tips = 3; // not used: the grammar has L
    ls.axiom = "F[+FL]FL".into();
    let g = interpret(&ls, "F[+FL]FL", 0).unwrap();
    let l = &g.skeleton.leaves;
    assert_eq!(l.len(), 2);
    assert_eq!((l[0].segment, l[0].along), (1, 1.0));
    assert_eq!((l[1].segment, l[1].along), (2, 1.0));
    // The card follows the turtle: blade (+y) along the heading, here -x.
    assert!(close(l[0].orientation * Vec3::Y, Vec3::new(-1.0, 0.0, 0.0)));
    g.skeleton.validate().unwrap();

    let mut ls = unit_system(90.0);
    ls.leaves_at_tips = 4;
    let g = interpret(&ls, "F[+F]F[-F]F", 0).unwrap();
    let sk = &g.skeleton;
    // Terminal segments: 1, 3 and 4.
    assert_eq!(sk.leaves.len(), 12);
    for leaf in &sk.leaves {
        assert!([1, 3, 4].contains(&leaf.segment));
        assert!((0.4..=1.0).contains(&leaf.along));
    }
    sk.validate().unwrap();
}

#[test]
fn oliapuram_nodes_have_five_children() {
    let ls = preset("oliapuram").unwrap();
    for seed in 0..8 {
        let g = grow(&ls, ls.iterations, seed, &mut |_| {}).unwrap();
        let sk = &g.skeleton;
        let mut children = vec![0usize; sk.segments.len()];
        for s in &sk.segments {
            if let Some(p) = s.parent {
                children[p as usize] += 1;
            }
        }
        // Every node either ends (leaves) or has five children, one of them its continuation.
        assert!(children.iter().all(|&c| c == 0 || c == 5), "seed {seed}");
        let forks = children.iter().filter(|&&c| c == 5).count();
        assert!(forks >= 1, "seed {seed}");
        assert_eq!(sk.segments.len(), 1 + 5 * forks);
        let tips = children.len() - forks;
        assert_eq!(sk.leaves.len(), 3 * tips);
        check_pipe(sk, Some(ls.twig_radius));
    }
}

#[test]
fn expansion_cap_refuses_instantly() {
    let ls = preset("abop-1.24a").unwrap();
    let start = std::time::Instant::now();
    let err = ls.expand(30, 0).unwrap_err();
    assert!(start.elapsed().as_millis() < 50, "{:?}", start.elapsed());
    let text = err.to_string();
    assert!(text.contains("30") && text.contains(&MAX_SYMBOLS.to_string()), "{text}");
    // Refused by the count bound, before any iteration is expanded; the bound names the first
    // iteration past the cap, len(10) = (5^11 - 3) / 2, and how many iterations fit.
    assert!(
        text.contains("at least 24414061 symbols after 10 iteration(s)") && text.contains("at most 9 iterations"),
        "{text}"
    );
    // `grow` reports progress per expanded iteration: a refused request reports none.
    let mut furthest = 0.0f32;
    let start = std::time::Instant::now();
    assert!(grow(&ls, 30, 0, &mut |f| furthest = furthest.max(f)).is_err());
    assert!(start.elapsed().as_millis() < 50);
    assert_eq!(furthest, 0.0, "no iteration was expanded");
    // 5^11 F's: len(11) = (5^12 - 3)/2 = 122,070,311 > 20 M, len(10) = 24,414,061 > 20 M,
    // len(9) = 4,882,811 fits.
    assert!(ls.expand(10, 0).is_err());
    assert_eq!(ls.min_lengths(9)[8], 4_882_811);
    // A stochastic system whose lower bound fits but whose draws do not: refused before the
    // iteration that would pass the cap is allocated.
    let ls = LSystem::parse("axiom = X\nX -> (0.9) XX | (0.1) X\n", "t").unwrap();
    assert!(ls.expand_capped(40.min(MAX_ITERATIONS), 1, 1000).is_err());
    let s = ls.expand_capped(5, 1, 1000).unwrap();
    assert!(s.len() <= 32);
    // Too many iterations.
    assert!(ls.expand(MAX_ITERATIONS + 1, 0).is_err());
}

#[test]
fn segment_limits_are_refused() {
    let ls = unit_system(30.0);
    let err = interpret_with(&ls, b"FFFFFFFFFFFF", 0, 10, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("more than 10 segments"), "{err}");
    assert!(interpret(&ls, "+-X", 0).is_err(), "no segment");
    let err = interpret(&ls, "[F]F", 0).unwrap_err();
    assert!(err.to_string().contains("second stem"), "{err}");
    assert!(interpret(&ls, "F]F", 0).is_err());
    let deep = format!("F{}", "[".repeat(MAX_BRACKET_DEPTH + 1));
    assert!(interpret(&ls, &deep, 0).is_err());
}

#[test]
fn parses_the_documented_example() {
    let text = "\
# comment
name = abop-1.24a
axiom = F
angle = 25.7          # degrees, turtle turn angle
iterations = 5        # default; the command line may override
length = 0.5          # F step length in metres
length_scale = 0.9    # F length multiplied per bracket depth
angle_scale = 1.0     # angle multiplied per bracket depth
width = 0.05          # optional base radius hint (radii come from the pipe model)
F -> F[+F]F[-F]F
X -> (0.33) F[+X]F[-X]+X | (0.33) F[-X]F[+X]-X | (0.34) F[&X]F[^X]X   # stochastic rule with weights
";
    let ls = LSystem::parse(text, "example.lsys").unwrap();
    assert_eq!(ls.name, "abop-1.24a");
    assert_eq!(
        (ls.angle_deg, ls.iterations, ls.length, ls.length_scale),
        (25.7, 5, 0.5, 0.9)
    );
    assert_eq!(ls.width, Some(0.05));
    assert_eq!(ls.rules.len(), 2);
    assert_eq!(ls.rules[0], Rule::deterministic('F', "F[+F]F[-F]F"));
    let x = &ls.rules[1];
    assert!(x.is_stochastic());
    assert_eq!(x.successors[2].symbols, "F[&X]F[^X]X");
    assert!((x.successors.iter().map(|s| s.weight).sum::<f64>() - 1.0).abs() < 1e-12);
    // `|` is the turn-around symbol except right before a weight.
    let ls = LSystem::parse("axiom = X\nX -> (1) F|F| | (1) |F\nY -> F|F\n", "t").unwrap();
    assert_eq!(ls.rules[0].successors[0].symbols, "F|F|");
    assert_eq!(ls.rules[0].successors[1].symbols, "|F");
    assert_eq!(ls.rules[1].successors[0].symbols, "F|F");
    // Predecessors may be turtle symbols; an empty successor erases.
    let ls = LSystem::parse("axiom = F-F\n- -> +\nF ->\n", "t").unwrap();
    assert_eq!(ls.expand(1, 0).unwrap(), "+");
    // No name: named after the file.
    assert_eq!(ls.name, "t");
}

fn parse_error(text: &str) -> String {
    match LSystem::parse(text, "bad.lsys") {
        Ok(ls) => panic!("parsed {text:?} as {ls:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn parse_errors_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("axiom = F\n\nfoo = 3\n", 3, "unknown setting"),
        ("axiom = F\nX -> (0) F | (1) G\n", 2, "positive"),
        ("axiom = F\nX -> (-1) F | (1) G\n", 2, "positive"),
        ("axiom = F\nX -> (inf) F | (1) G\n", 2, "positive"),
        ("axiom = F\nX -> (NaN) F\n", 2, "positive"),
        ("axiom = F\nX -> (x) F\n", 2, "not a number"),
        ("axiom = F\nX -> (0.5) F (0.5) G\n", 2, "separated by `|`"),
        ("axiom = F\nX -> F | (0.5) G\n", 2, "weights"),
        ("axiom = F\nX -> F\n# c\nX -> G\n", 4, "already has a rule on line 2"),
        ("axiom = F\nF -> F[+F\n", 2, "unclosed"),
        ("axiom = F\nF -> F]\n", 2, "without a matching"),
        ("axiom = F\n[ -> F\n", 2, "brackets cannot be rewritten"),
        ("axiom = F\niterations = 33\n", 2, "0 to 32"),
        ("axiom = F\niterations = -1\n", 2, "0 to 32"),
        ("axiom = F\nangle = 400\n", 2, "[0, 360]"),
        ("axiom = F\nlength = 0\n", 2, "(0, 100]"),
        ("axiom = F\nlength_scale = nan\n", 2, "finite"),
        ("axiom = F\nangle = 10\nangle = 20\n", 3, "already set on line 2"),
        ("axiom = F\nF -> Fé\n", 2, "not ASCII"),
        ("axiom = F\nthis is not a rule\n", 2, "expected `key = value`"),
        ("name = x\n\naxiom = \n", 3, "at least one symbol"),
        ("axiom = F\nX -> (1) F)\n", 2, "`)`"),
    ];
    for &(text, line, what) in cases {
        let e = parse_error(text);
        assert!(e.contains(&format!("bad.lsys line {line} ")), "{text:?}: {e}");
        assert!(e.contains(what), "{text:?}: {e}");
    }
    assert!(parse_error("F -> FF\n").contains("no axiom"));
    let long = format!("axiom = F\nF -> {}\n", "F".repeat(MAX_SUCCESSOR_SYMBOLS + 1));
    assert!(parse_error(&long).contains("at most 4096"));
    let huge = "# x\n".repeat(MAX_TEXT_BYTES / 4 + 1);
    assert!(parse_error(&huge).contains("at most"));
}

#[test]
fn validate_catches_code_built_mistakes() {
    let mut ls = LSystem::new("t", "F");
    ls.rules.push(Rule::deterministic('F', "F[F"));
    assert!(ls.expand(1, 0).is_err());
    let mut ls = LSystem::new("t", "F");
    ls.length = -1.0;
    assert!(matches!(ls.validate(), Err(SimError::Parameter { name: "length", .. })));
    let mut ls = LSystem::new("t", "F");
    ls.rules.push(Rule::deterministic('F', "FF"));
    ls.rules.push(Rule::deterministic('F', "F"));
    assert!(ls.validate().is_err());
    let mut ls = LSystem::new("t", "F");
    ls.rules.push(Rule {
        predecessor: 'X',
        successors: vec![Successor {
            weight: 0.0,
            symbols: "F".into(),
        }],
    });
    assert!(ls.validate().is_err());
    assert!(LSystem::new("a#b", "F").validate().is_err());
    assert!(LSystem::new("t", "Fé").validate().is_err());
}

#[test]
fn to_text_round_trips() {
    for name in preset_names() {
        let ls = preset(name).unwrap();
        let again = LSystem::parse(&ls.to_text(), "round trip").unwrap();
        assert_eq!(again.rules.len(), ls.rules.len());
        for (a, b) in again.rules.iter().zip(&ls.rules) {
            assert_eq!(a.predecessor, b.predecessor);
            for (x, y) in a.successors.iter().zip(&b.successors) {
                assert_eq!(x.symbols, y.symbols);
                assert!((x.weight - y.weight).abs() < 1e-12);
            }
        }
        let strip = |mut l: LSystem| {
            l.rules.clear();
            l
        };
        assert_eq!(strip(again), strip(ls.clone()), "{name}");
    }
    let mut ls = LSystem::new("custom", "X");
    ls.width = Some(0.3);
    ls.rules.push(Rule::deterministic('X', ""));
    assert_eq!(LSystem::parse(&ls.to_text(), "t").unwrap(), ls);
}

#[test]
fn preset_lookup() {
    assert_eq!(preset_names().len(), PRESETS.len());
    for name in preset_names() {
        assert_eq!(preset(name).unwrap().name, *name);
        assert!(preset_text(name).is_some());
    }
    assert!(preset("abop-1.24g").is_none());
}

#[test]
fn junk_input_never_panics() {
    // Line-shaped junk: settings with good and bad values, rules with random bodies, noise.
    let keys: &[&str] = &[
        "axiom",
        "iterations",
        "angle",
        "length",
        "length_scale",
        "angle_scale",
        "width",
        "twig_radius",
        "width_decrement",
        "taper",
        "leaves_at_tips",
        "leaf_length",
        "angle_jitter",
        "length_jitter",
        "roll_jitter",
        "name",
        "bogus",
    ];
    let values: &[&str] = &[
        "0", "1", "2", "3", "5", "9", "33", "90", "0.5", "1e-9", "1e9", "nan", "-1", "inf", "F", "X[+F]", "",
    ];
    let good_settings: &[&str] = &[
        "iterations = 3",
        "iterations = 6",
        "angle = 90",
        "angle = 22.5",
        "length = 0.3",
        "length_scale = 0.8",
        "angle_scale = 1.5",
        "width = 0.2",
        "leaves_at_tips = 2",
        "length_jitter = 0.5",
        "angle_jitter = 30",
        "roll_jitter = 90",
        "taper = 3",
        "width_decrement = 0.5",
        "axiom = X",
        "axiom = F[+F]fX",
    ];
    let symbols: &[&str] = &[
        "F", "F", "F", "f", "X", "A", "L", "!", "+", "-", "&", "^", "\\", "/", "|", "[", "]", " ",
    ];
    let noise: &[&str] = &[
        "(", ")", "(0.5)", "(1e308)", "(-1)", " | ", "->", "=", "#", "é", "\u{0}", "\t",
    ];
    let mut rng = Rng::new(99);
    let pick = |rng: &mut Rng, list: &[&'static str]| list[rng.below(list.len() as u64) as usize];
    let (mut ok, mut grown) = (0, 0);
    for case in 0..20_000u64 {
        let mut text = String::new();
        if case % 3 != 0 {
            text.push_str("axiom = F\n");
        }
        for _ in 0..1 + rng.below(6) {
            match rng.below(6) {
                0 | 1 if rng.below(5) == 0 => {
                    text.push_str(&format!("{} = {}", pick(&mut rng, keys), pick(&mut rng, values)));
                }
                0 | 1 => text.push_str(pick(&mut rng, good_settings)),
                2..=4 => {
                    text.push(['F', 'X', 'A', '+', 'f', '|'][rng.below(6) as usize]);
                    text.push_str(" -> ");
                    let alternatives = if rng.below(2) == 0 { 1 } else { 1 + rng.below(4) };
                    for a in 0..alternatives {
                        if alternatives > 1 {
                            text.push_str(if a > 0 { " | (" } else { "(" });
                            let w = if rng.below(20) == 0 {
                                ["0", "-1", "x"]
                            } else {
                                ["1", "0.3", "2e3"]
                            };
                            text.push_str(pick(&mut rng, &w));
                            text.push_str(") ");
                        }
                        // Mostly balanced brackets, sometimes not.
                        let mut depth = 0;
                        for _ in 0..rng.below(12) {
                            match rng.below(8) {
                                0 => {
                                    text.push('[');
                                    depth += 1;
                                }
                                1 if depth > 0 => {
                                    text.push(']');
                                    depth -= 1;
                                }
                                _ => text.push_str(pick(&mut rng, symbols)),
                            }
                        }
                        if rng.below(10) != 0 {
                            text.push_str(&"]".repeat(depth));
                        }
                    }
                }
                _ => {
                    for _ in 0..rng.below(8) {
                        let list = if rng.below(2) == 0 { noise } else { symbols };
                        text.push_str(pick(&mut rng, list));
                    }
                }
            }
            text.push('\n');
        }
        match parse_and_expand_limited(&text) {
            Ok(_) => ok += 1,
            Err(SimError::Invariant(m)) => panic!("bug on {text:?}: {m}"),
            Err(_) => {}
        }
        if let Ok(ls) = LSystem::parse(&text, "junk") {
            if let Ok(s) = ls.expand_capped(ls.iterations.min(6), case, 20_000) {
                match interpret_with(&ls, s.as_bytes(), case, 5_000, &mut |_| {}) {
                    Ok(_) => grown += 1,
                    Err(SimError::Invariant(m)) => panic!("bug on {text:?}: {m}"),
                    Err(_) => {}
                }
            }
        }
    }
    // Random bytes, including invalid UTF-8 made lossy.
    for _ in 0..2000 {
        let len = rng.below(200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        if let Err(SimError::Invariant(m)) = parse_and_expand_limited(&text) {
            panic!("bug on {text:?}: {m}");
        }
    }
    assert!(
        ok > 1000 && grown > 1000,
        "the junk reached expansion {ok} times and growth {grown} times"
    );
}
