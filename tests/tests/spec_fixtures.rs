//! Spec import on the repository's own fixtures (`tests/fixtures/specs/<format>/`, small files
//! written for these tests in each tool's format, with the quirks of the real files): each loads
//! with the expected species and format, the values read are the values written (and the
//! defaults of the writing tool where a file leaves one out), Sylva's text format round-trips
//! every fixture exactly, the format is told by the content, and bad input gives errors that
//! name the file, the parameter and what is allowed. These always run; `spec_import.rs` checks
//! the same on the third-party corpus when it is there.

use sylva_sim::spec::load::{load_file, load_str, SpecLibrary};
use sylva_sim::spec::SpecTool::{self, *};
use sylva_sim::spec::{text, Conical, DownAngleV, NegativeRotate, SpecError, WeberPennSpec};
use sylva_tests::{fixture, fixture_spec_files};

fn load(rel: &str) -> SpecLibrary {
    load_file(&fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn one(rel: &str) -> WeberPennSpec {
    load(rel).pick(None).unwrap().clone()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

fn has_note(s: &WeberPennSpec, words: &[&str]) -> bool {
    s.notes.iter().any(|n| words.iter().all(|w| n.contains(w)))
}

/// Per-level values of a spec, levels 0..=3.
fn per_level<T>(s: &WeberPennSpec, f: impl Fn(&sylva_sim::spec::LevelSpec) -> T) -> Vec<T> {
    s.level.iter().map(f).collect()
}

/// Every fixture file: format, species names (file order), origin of the species.
const FIXTURES: &[(&str, SpecTool, &[&str], SpecTool)] = &[
    ("arbaro/small_birch.xml", Arbaro, &["fixture_birch"], Arbaro),
    ("arbaro/small_palm", Arbaro, &["fixture_palm"], Arbaro),
    ("helios/fixture_library.xml", Helios, &["Quince", "Fig"], Helios),
    ("sapling-0.2/small_aspen.py", SaplingV02, &["small_aspen"], SaplingV02),
    ("sapling-0.3/little_fir.py", SaplingV03, &["little_fir"], SaplingV03),
    ("sapling-4/Little Pine.py", Sapling4, &["Little Pine"], Sapling4),
    ("sylva/small_willow.sylva", Sylva, &["small_willow"], Sylva),
    ("tree-gen/little_oak.py", TreeGen, &["little_oak"], TreeGen),
];

#[test]
fn every_fixture_loads_with_its_species_and_format() {
    let files = fixture_spec_files();
    let listed: Vec<_> = FIXTURES.iter().map(|f| fixture(f.0)).collect();
    assert_eq!(files, listed, "fixture files and the FIXTURES table");
    for &(rel, format, names, origin) in FIXTURES {
        let lib = load(rel);
        assert_eq!(lib.format, format, "{rel}");
        assert_eq!(lib.names(), names, "{rel}");
        assert_eq!(lib.file, fixture(rel).display().to_string());
        for s in &lib.species {
            assert_eq!(s.origin, origin, "{rel}");
            s.validate(&lib.file).unwrap();
        }
    }
}

#[test]
fn arbaro_values_are_the_values_written() {
    let t = one("arbaro/small_birch.xml");
    assert_eq!(t.species, "fixture_birch", "from <species name>, not the file name");
    assert_eq!(
        (t.levels, t.scale, t.scale_v, t.ratio, t.ratio_power),
        (3, 8.0, 1.5, 0.02, 1.2)
    );
    assert_eq!((t.shape, t.lobes, t.lobe_depth, t.flare), (4, 4, 0.05, 0.4));
    assert_eq!(
        (t.leaves, t.leaf_shape.as_str(), t.leaf_scale, t.leaf_scale_x),
        (6, "disc", 0.12, 0.6)
    );
    assert_eq!((t.scale0, t.scale0_v, t.base_size), (1.0, 0.1, 0.3));
    assert_eq!(per_level(&t, |l| l.branches)[1..], [12, 5, 5]);
    assert_eq!(per_level(&t, |l| l.curve_res), [4, 3, 2, 1]);
    assert_eq!(per_level(&t, |l| l.length)[..3], [1.0, 0.35, 0.5]);
    assert_eq!(per_level(&t, |l| l.down_angle), [0.0, 55.0, 40.0, 45.0]);
    assert_eq!(per_level(&t, |l| l.down_angle_v), [0.0, -30.0, 10.0, 10.0]);
    assert_eq!(per_level(&t, |l| l.rotate), [0.0, 140.0, -90.0, 77.0]);
    assert_eq!(
        (t.level[0].seg_splits, t.level[0].split_angle, t.level[0].split_angle_v),
        (0.4, 25.0, 5.0)
    );
    assert_eq!(per_level(&t, |l| l.curve)[..3], [0.0, -20.0, 10.0]);
    // AttractionUp acts on levels >= 2.
    assert_eq!(per_level(&t, |l| l.attraction_up), [0.0, 0.0, 0.8, 0.8]);
    assert_eq!(t.semantics.conical, Conical::Pure);
    // Left out of the hand-written file: Arbaro's defaults, with a note naming them.
    assert_eq!(
        (t.smooth, t.leaf_quality, t.leaf_stem_len, t.leaf_distrib, t.leaf_bend),
        (0.5, 1.0, 0.5, 4, 0.3)
    );
    assert_eq!(
        (
            t.prune_ratio,
            t.prune_width,
            t.prune_width_peak,
            t.prune_power_low,
            t.prune_power_high
        ),
        (0.0, 0.5, 0.5, 0.5, 0.5)
    );
    assert!(
        has_note(&t, &["defaults used", "PruneRatio", "LeafBend"]),
        "{:?}",
        t.notes
    );
    // A parameter stock Arbaro does not know is kept, not refused.
    assert_eq!(t.extras["BarkTexture"], "birch_bark.jpg");
    assert!(has_note(&t, &["BarkTexture"]), "{:?}", t.notes);

    // No extension, CRLF, double quotes, every parameter given.
    let p = one("arbaro/small_palm");
    assert_eq!((p.species.as_str(), p.levels), ("fixture_palm", 2));
    assert_eq!(p.ratio, 0.025, "2.5E-2");
    assert_eq!((p.leaves, p.leaf_shape.as_str()), (-5, "palm"), "a fan of leaves");
    assert_eq!(p.leaf_stem_len, -1.1);
    assert_eq!(p.level[1].rotate, -120.0, "alternating fronds");
    assert_eq!(p.level[0].curve_v, -20.0, "a helical trunk");
    assert_eq!(
        (p.level[0].taper, p.level[0].length_v, p.level[0].curve_res),
        (0.9, 0.1, 6)
    );
    assert_eq!((p.level[1].branches, p.level[1].branch_dist), (14, 0.0));
    assert_eq!((p.level[2].down_angle, p.level[2].down_angle_v), (30.0, 10.0));
    assert_eq!((p.smooth, p.leaf_distrib, p.leaf_bend), (0.6, 3, 0.1));
    assert!(!has_note(&p, &["defaults used"]), "{:?}", p.notes);
    assert!(p.extras.is_empty(), "{:?}", p.extras);
}

#[test]
fn sapling_values_are_the_values_written() {
    // 0.2: scalar attractUp, leaf bend, no flare, leaves written as a float, prune on.
    let a = one("sapling-0.2/small_aspen.py");
    assert_eq!((a.origin, a.species.as_str()), (SaplingV02, "small_aspen"));
    assert_eq!(
        (a.levels, a.shape, a.scale, a.scale_v, a.base_size),
        (3, 2, 7.0, 1.0, 0.35),
        "float32 noise rounded away"
    );
    assert_eq!((a.ratio, a.ratio_power, a.scale0, a.scale0_v), (0.02, 1.3, 1.0, 0.1));
    assert_eq!(per_level(&a, |l| l.length), [1.0, 0.35, 0.55, 0.45]);
    assert_eq!(per_level(&a, |l| l.branches), [1, 14, 6, 4], "branches[0] is unused");
    assert_eq!(per_level(&a, |l| l.curve_res), [4, 3, 2, 1]);
    assert_eq!(per_level(&a, |l| l.rotate), [140.0, 140.0, -110.0, 77.0]);
    assert_eq!(per_level(&a, |l| l.attraction_up), [0.0, 0.0, 0.4, 0.4]);
    assert!(has_note(&a, &["attractUp given as one number"]));
    // Sapling grows the trunk straight up: downAngle[0] is kept aside, not used.
    assert_eq!(a.level[0].down_angle, 0.0);
    assert_eq!(a.extras["downAngle[0]"], "90 0");
    // No leaf angle keys in 0.2: the leaves take level min(levels, 3)'s.
    assert_eq!((a.level[3].down_angle, a.level[3].rotate), (45.0, 77.0));
    assert!(has_note(&a, &["no leafDownAngle"]));
    assert_eq!((a.leaves, a.leaf_bend, a.leaf_distrib), (8, 0.3, 4));
    assert!(has_note(&a, &["T101985"]), "leaves 8.0 read as 8 with a note");
    assert_eq!(a.flare, 0.0);
    assert_eq!((a.prune_ratio, a.prune_width, a.prune_width_peak), (0.8, 0.4, 0.6));
    assert_eq!(a.prune_power_low, 0.001);
    assert_eq!(a.semantics.down_angle_v, DownAngleV::Paper);
    assert_eq!(a.semantics.negative_rotate, NegativeRotate::AlternateAbs);
    assert_eq!(a.semantics.conical, Conical::Paper);
    assert_eq!(a.extras["seed"], "3");
    assert!(has_note(&a, &["UI, armature and animation keys dropped", "windSpeed"]));

    // 0.3: per-level attractUp, rootFlare, separate leaf angles, reversed down-angle variation.
    let f = one("sapling-0.3/little_fir.py");
    assert_eq!((f.origin, f.species.as_str()), (SaplingV03, "little_fir"));
    assert_eq!(
        (f.shape, f.shape_deep, f.custom_shape),
        (0, Some(4), Some([0.5, 1.0, 0.3, 0.5]))
    );
    assert_eq!((f.scale, f.scale_v, f.ratio, f.ratio_power), (9.0, 1.5, 0.018, 1.5));
    assert_eq!(f.flare, 0.2, "rootFlare 1.2");
    assert_eq!(per_level(&f, |l| l.attraction_up), [0.0, 0.3, 0.2, 0.0]);
    assert_eq!(per_level(&f, |l| l.branches), [1, 16, 6, 10]);
    assert_eq!((f.level[1].down_angle, f.level[1].down_angle_v), (100.0, 30.0));
    assert_eq!(f.semantics.down_angle_v, DownAngleV::SaplingReversed);
    assert_eq!(f.semantics.conical, Conical::Sapling);
    // Levels 3: the leaf level is 3 and takes the leaf keys.
    let l3 = &f.level[3];
    assert_eq!(
        [l3.down_angle, l3.down_angle_v, l3.rotate, l3.rotate_v],
        [50.0, 10.0, 137.5, 0.0]
    );
    assert_eq!((f.leaves, f.leaf_shape.as_str(), f.leaf_bend), (10, "rect", 0.0));
    assert!(has_note(&f, &["leaf bend set to 0"]));
    assert_eq!(f.prune_ratio, 0.0, "prune is False");
    assert_eq!(f.extras["pruneRatio"], "1");
    assert_eq!(f.extras["rMode"], "'rotate'");
    assert_eq!(f.extras["branchDist"], "1.5");
    assert!(!has_note(&f, &["defaults used"]), "every 0.3 key given: {:?}", f.notes);

    // sapling_4: told by 'attachment'/'leafType'; no pruning keys.
    let p = one("sapling-4/Little Pine.py");
    assert_eq!((p.origin, p.species.as_str()), (Sapling4, "Little Pine"));
    assert_eq!((p.levels, p.scale, p.scale_v, p.flare), (2, 5.0, 0.5, 0.1));
    assert_eq!(per_level(&p, |l| l.attraction_up), [1.0, 0.2, 0.0, 0.0]);
    assert_eq!((p.level[1].branches, p.level[1].curve_res), (20, 4));
    // Levels 2: the leaf level is 2.
    let l2 = &p.level[2];
    assert_eq!(
        [l2.down_angle, l2.down_angle_v, l2.rotate, l2.rotate_v],
        [60.0, 20.0, 137.5, 15.0]
    );
    assert_eq!((p.leaves, p.prune_ratio), (30, 0.0));
    assert_eq!(p.extras["attachment"], "'1'");
    assert_eq!(p.extras["leafType"], "'5'");
    assert!(has_note(&p, &["sapling_4"]));
    assert!(!has_note(&p, &["defaults used"]), "{:?}", p.notes);
}

#[test]
fn treegen_values_merge_over_treegen_defaults() {
    let o = one("tree-gen/little_oak.py");
    assert_eq!((o.origin, o.species.as_str()), (TreeGen, "little_oak"));
    assert_eq!((o.shape, o.levels, o.scale, o.scale_v), (1, 3, 7.0, 1.0));
    assert_eq!((o.ratio, o.ratio_power, o.flare), (0.02, 1.3, 0.5));
    assert_eq!(o.base_splits, -2, "negative: a random number of splits up to 2");
    assert_eq!(o.base_size, 0.3);
    assert_eq!(per_level(&o, |l| l.base_size)[1..], [0.1, 0.02, 0.02]);
    assert_eq!(per_level(&o, |l| l.branches), [1, 12, 6, 10]);
    assert_eq!(per_level(&o, |l| l.rotate), [0.0, 140.0, -100.0, 77.0]);
    assert_eq!(per_level(&o, |l| l.curve_back), [0.0, 20.0, 0.0, 0.0]);
    assert_eq!(per_level(&o, |l| l.seg_splits), [0.3, 0.1, 0.0, 0.0]);
    // tropism[2] is the upward attraction of levels >= 2.
    assert_eq!(per_level(&o, |l| l.attraction_up), [0.0, 0.0, 0.4, 0.4]);
    assert_eq!((o.leaves, o.leaf_shape.as_str(), o.leaf_scale), (12, "7", 0.12));
    // 'leaves' is not a tree-gen key: ignored, with a note; leaf_blos_num is the count.
    assert!(has_note(&o, &["leaves = 30", "ignored"]), "{:?}", o.notes);
    // Left out: tree-gen's defaults (leaf_bend 0.6, bend_v), not Arbaro's.
    assert_eq!(o.leaf_bend, 0.6);
    assert_eq!(o.extras["bend_v"], "[0.0, 50.0, 0.0, 0.0]");
    assert!(o.extras.contains_key("branch_dist"));
    assert!(has_note(&o, &["docstring: LITTLE OAK"]));
    assert_eq!(o.semantics.conical, Conical::Paper);
    assert_eq!(o.semantics.negative_rotate, NegativeRotate::Alternate180);
}

#[test]
fn helios_values_are_the_values_written() {
    let lib = load("helios/fixture_library.xml");
    assert_eq!(lib.format, Helios);
    let q = lib.pick(Some("Quince")).unwrap();
    assert_eq!(
        (q.shape, q.base_splits, q.base_split_size, q.scale, q.scale_v),
        (2, 2, Some(0.25), 5.0, 0.5)
    );
    assert_eq!(
        (q.ratio, q.ratio_power, q.lobes, q.lobe_depth, q.flare),
        (0.03, 1.2, 3, 0.05, 0.6)
    );
    assert_eq!(q.level[0].length, 1.0, "'1.' reads as 1");
    assert_eq!(per_level(q, |l| l.length), [1.0, 0.5, 0.4, 0.3]);
    assert_eq!(per_level(q, |l| l.rotate), [140.0, 140.0, -80.0, 120.0]);
    assert_eq!(per_level(q, |l| l.curve_res), [4, 3, 2, 1]);
    assert!(has_note(q, &["nRotate (5 values)"]), "{:?}", q.notes);
    assert_eq!(q.level[0].branches, 1);
    assert!(has_note(q, &["nBranches[0] = 0"]));
    assert!(has_note(q, &["declaration"]));
    assert_eq!((q.leaves, q.leaf_scale, q.leaf_scale_x), (4, 0.08, 0.6));
    assert_eq!(q.extras["LeafFile"], "plugins/weberpenntree/leaves/QuinceLeaf.png");
    assert_eq!(q.extras["WoodFile"], "plugins/weberpenntree/wood/wood3.jpg");
    assert_eq!(q.semantics.down_angle_v, DownAngleV::Random);
    assert_eq!(q.semantics.negative_rotate, NegativeRotate::Plain);

    let fig = lib.pick(Some("Fig")).unwrap();
    assert_eq!((fig.levels, fig.z_scale, fig.ratio), (2, 1.2, 0.035));
    assert_eq!(per_level(fig, |l| l.branches)[..2], [1, 14]);
    assert!(!has_note(fig, &["nBranches[0]"]), "nBranches[0] = 1 needs no note");
    assert_eq!(fig.extras["WoodColor"], "0.55 0.45 0.35");
    assert!(fig.extras.contains_key("LeafAngleDist"));
    assert!(!has_note(fig, &["integrates to"]), "the density integrates to 1");
    // Parameters Helios lacks take Arbaro's defaults.
    assert_eq!((fig.prune_ratio, fig.leaf_bend), (0.0, 0.3));
}

#[test]
fn sylva_values_are_the_values_written() {
    let w = one("sylva/small_willow.sylva");
    assert_eq!((w.origin, w.species.as_str()), (Sylva, "small_willow"));
    assert_eq!((w.shape, w.levels, w.scale, w.scale_v), (3, 3, 6.0, 0.5));
    assert_eq!(w.leaf_shape, "willow leaf", "a quoted string");
    assert_eq!(per_level(&w, |l| l.branches)[1..3], [10, 4]);
    assert_eq!(per_level(&w, |l| l.rotate), [0.0, -110.0, 140.0, 77.0]);
    assert_eq!((w.level[1].base_size, w.level[2].attraction_up), (0.1, -2.0));
    // Weber 2008's fork rules: off where not given (as for every imported spec), on where set.
    assert_eq!(per_level(&w, |l| l.fork_area), [0.0, 0.5, 0.0, 0.0]);
    assert_eq!(per_level(&w, |l| l.fork_push), [0.0, 1.0, 0.0, 0.0]);
    assert_eq!(w.extras["source"], "hand-written, not converted");
    assert!(has_note(&w, &["hand-written fixture"]));
    assert!(
        has_note(&w, &["not given, Arbaro defaults used", "LeafBend"]),
        "{:?}",
        w.notes
    );
    assert_eq!((w.leaf_bend, w.smooth), (0.3, 0.5));
}

#[test]
fn sylva_text_round_trips_every_fixture() {
    let mut count = 0;
    for path in fixture_spec_files() {
        let lib = load_file(&path).unwrap();
        for spec in &lib.species {
            let written = text::write(spec);
            let back = text::parse(&written, "round-trip.sylva").unwrap_or_else(|e| panic!("{e}\n{written}"));
            let (mut a, mut b) = (spec.clone(), back);
            a.notes.clear();
            b.notes.clear();
            assert_eq!(a, b, "{}: {}", path.display(), spec.species);
            let again = load_str(&written, "x.sylva").unwrap();
            assert_eq!(again.format, Sylva);
            assert_eq!(again.species[0].origin, spec.origin);
            count += 1;
        }
    }
    assert_eq!(count, 9);
}

#[test]
fn format_is_told_by_content_not_extension() {
    for (rel, named, format) in [
        ("arbaro/small_birch.xml", "birch.py", Arbaro),
        ("tree-gen/little_oak.py", "oak.xml", TreeGen),
        ("sapling-0.2/small_aspen.py", "aspen.xml", SaplingV02),
        ("sapling-4/Little Pine.py", "pine", Sapling4),
        ("helios/fixture_library.xml", "library.py", Helios),
        ("sylva/small_willow.sylva", "willow.xml", Sylva),
    ] {
        assert_eq!(load_str(&read(rel), named).unwrap().format, format, "{rel} as {named}");
    }
}

/// An error that names the file, a parameter and what is allowed.
fn assert_helpful(e: &SpecError, file: &str, parameter: &str, words: &[&str]) {
    assert_eq!(e.file, file, "{e}");
    assert_eq!(e.parameter, parameter, "{e}");
    assert!(e.message.contains("allowed"), "no allowed range in: {e}");
    for w in words {
        assert!(e.message.contains(w), "'{w}' missing in: {e}");
    }
}

/// The birch fixture with one parameter's value replaced.
fn birch_with(name: &str, value: &str) -> String {
    let text = read("arbaro/small_birch.xml");
    let needle = format!("<param name='{name}' value='");
    let start = text.find(&needle).expect(name) + needle.len();
    let end = start + text[start..].find('\'').unwrap();
    format!("{}{}{}", &text[..start], value, &text[end..])
}

#[test]
fn arbaro_errors_name_file_parameter_and_allowed_values() {
    let text = read("arbaro/small_palm");
    let e = load_str(&text[..text.len() / 2], "cut.xml").unwrap_err();
    assert_eq!(e.file, "cut.xml");
    assert!(e.parameter.starts_with("line "), "{e}");
    assert!(
        e.message.contains("malformed XML") && e.message.contains("allowed"),
        "{e}"
    );

    // Levels as "3.0": Arbaro reads integers with Integer.parseInt.
    let e = load_str(&birch_with("Levels", "3.0"), "birch.xml").unwrap_err();
    assert_helpful(&e, "birch.xml", "Levels", &["3.0", "integer"]);
    let e = load_str(&birch_with("Scale", "NaN"), "birch.xml").unwrap_err();
    assert_helpful(&e, "birch.xml", "Scale", &["NaN", "> 0"]);
    let e = load_str(&birch_with("1Length", "-0.3"), "birch.xml").unwrap_err();
    assert_helpful(&e, "birch.xml", "1Length", &["-0.3", "> 0"]);
    let e = load_str(&birch_with("1Branches", "1000000000"), "birch.xml").unwrap_err();
    assert_helpful(&e, "birch.xml", "1Branches", &["1000000000", "10000"]);
    let e = load_str(&birch_with("Shape", "9"), "birch.xml").unwrap_err();
    assert_helpful(&e, "birch.xml", "Shape", &["9", "8"]);
    // The error names the file given to the loader.
    let dir = scratch("arbaro");
    let bad = dir.join("bad birch.xml");
    std::fs::write(&bad, birch_with("Ratio", "0")).unwrap();
    let e = load_file(&bad).unwrap_err();
    assert_helpful(&e, &bad.display().to_string(), "Ratio", &["> 0"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn library_errors_name_the_species_allowed() {
    let lib = load("helios/fixture_library.xml");
    let e = lib.pick(Some("Banana")).unwrap_err();
    assert_helpful(&e, &lib.file, "species", &["Banana", "Quince", "Fig"]);
    let e = lib.pick(None).unwrap_err();
    assert_helpful(&e, &lib.file, "species", &["2 species", "Quince", "Fig"]);
    assert!(
        !e.message.contains("Medlar"),
        "a commented-out species is not offered: {e}"
    );

    // Too few list values for Levels + 1; a missing required element; a non-integer Levels.
    let text = read("helios/fixture_library.xml");
    let bad = text.replacen("<nLength>1. 0.5 0.4 0.3</nLength>", "<nLength>1. 0.5</nLength>", 1);
    let e = load_str(&bad, "lib.xml").unwrap_err();
    assert_helpful(&e, "lib.xml", "nLength", &["Quince", "line "]);
    let bad = text.replacen("<Scale> 4 </Scale>", "", 1);
    let e = load_str(&bad, "lib.xml").unwrap_err();
    assert_helpful(&e, "lib.xml", "Scale", &["Fig", "requires"]);
    let bad = text.replacen("<Levels> 3 </Levels>", "<Levels> 2.5 </Levels>", 1);
    let e = load_str(&bad, "lib.xml").unwrap_err();
    assert_helpful(&e, "lib.xml", "Levels", &["Quince", "2.5"]);
}

#[test]
fn python_and_sylva_errors_name_file_parameter_and_allowed_values() {
    // tree-gen: 1e9 branches, too short a list; Sapling: shape not a string, a 2-value tuple.
    let e = load_str("params = {'branches': [1, 1000000000, 3, 4]}", "t.py").unwrap_err();
    assert_helpful(&e, "t.py", "1Branches", &["10000"]);
    let oak = read("tree-gen/little_oak.py").replace("'length': [1, 0.45, 0.5, 0]", "'length': [1, 0.45]");
    let e = load_str(&oak, "oak.py").unwrap_err();
    assert_helpful(&e, "oak.py", "length", &["2 values", "4"]);
    let e = load_str("{'shape': 7, 'attractUp': 0.5}", "p.py").unwrap_err();
    assert_helpful(&e, "p.py", "shape", &["string"]);
    let fir = read("sapling-0.3/little_fir.py").replace("'shape': '0'", "'shape': 0");
    let e = load_str(&fir, "fir.py").unwrap_err();
    assert_helpful(&e, "fir.py", "shape", &["string"]);
    let aspen = read("sapling-0.2/small_aspen.py");
    let lengths = "'length': (1.0, 0.3499999940395355, 0.550000011920929, 0.44999998807907104)";
    assert!(aspen.contains(lengths));
    let e = load_str(&aspen.replace(lengths, "'length': (1.0, 0.35)"), "aspen.py").unwrap_err();
    assert_helpful(&e, "aspen.py", "length", &["2 values", "4"]);
    let e = load_str("just some text", "notes.txt").unwrap_err();
    assert_helpful(&e, "notes.txt", "format", &["Arbaro"]);

    // An unknown key in a Sylva file, and one given twice.
    let written = text::write(&one("arbaro/small_birch.xml"));
    let e = load_str(&written.replace("LeafBend = ", "LeafBent = "), "birch.sylva").unwrap_err();
    assert_helpful(&e, "birch.sylva", "LeafBent", &["unknown key", "line "]);
    let willow = read("sylva/small_willow.sylva");
    let e = load_str(&format!("{willow}Scale = 7\n"), "willow.sylva").unwrap_err();
    assert_helpful(&e, "willow.sylva", "Scale", &["twice"]);
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sylva-fixture-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn truncated_and_mutated_fixtures_never_panic() {
    // Every prefix at a stride, and every file with one byte changed at a stride: errors or
    // specs, never a panic.
    for path in fixture_spec_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let stride = (text.len() / 300).max(1);
        let mut refused = 0;
        for cut in (0..text.len()).step_by(stride).filter(|&c| text.is_char_boundary(c)) {
            refused += load_str(&text[..cut], &name).is_err() as usize;
        }
        assert!(refused > 0, "{name}: every prefix loads");
        let mut bytes = text.clone().into_bytes();
        for i in (0..bytes.len()).step_by(stride) {
            let old = bytes[i];
            for b in [b'<', b'"', b'\'', b'{', b'(', b'-', b'9', b' '] {
                bytes[i] = b;
                if let Ok(s) = std::str::from_utf8(&bytes) {
                    let _ = load_str(s, &name);
                }
            }
            bytes[i] = old;
        }
    }
}
