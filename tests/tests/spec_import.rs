//! Spec import on the third-party corpus: every real file in `shared/data/tree-specs` loads with
//! the expected species and format, mapped values match the files, Sylva's text format
//! round-trips every loaded spec exactly, and bad input gives errors that name the file, the
//! parameter and what is allowed.
//!
//! The corpus is not part of the repository: the `corpus_*` tests are ignored by default and run
//! by `scripts/test.sh` when it finds the corpus (see `sylva_tests::tree_specs_dir`). The same
//! checks on the repository's own fixtures, one or more per format, are in `spec_fixtures.rs`
//! and always run.

use std::path::PathBuf;
use sylva_sim::spec::load::{load_file, load_str, SpecLibrary, MAX_FILE_BYTES};
use sylva_sim::spec::SpecTool::{self, *};
use sylva_sim::spec::{text, DownAngleV, SpecError, WeberPennSpec};

fn data_dir() -> PathBuf {
    sylva_tests::tree_specs_dir()
}

fn load(rel: &str) -> SpecLibrary {
    let path = data_dir().join(rel);
    load_file(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn one(rel: &str) -> WeberPennSpec {
    load(rel).pick(None).unwrap().clone()
}

fn all_files() -> Vec<PathBuf> {
    sylva_tests::tree_spec_files()
}

/// Single-species files: path, format, species name.
const SINGLE: &[(&str, SpecTool, &str)] = &[
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/black_tupelo_1.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/black_tupelo_2.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/black_tupelo_3.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/ca_black_oak_1.xml",
        Arbaro,
        "ca_black_oak",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/ca_black_oak_2.xml",
        Arbaro,
        "ca_black_oak",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/conifer_1.xml",
        Arbaro,
        "tamarack",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/conifer_2.xml",
        Arbaro,
        "tamarack",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/conifer_3.xml",
        Arbaro,
        "tamarack",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/desert_bush_1.xml",
        Arbaro,
        "desert_bush",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/desert_bush_2.xml",
        Arbaro,
        "desert_bush",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/eastern_cottonwood_1.xml",
        Arbaro,
        "eastern_cottonwood",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/eastern_cottonwood_2.xml",
        Arbaro,
        "eastern_cottonwood",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/european_larch_1.xml",
        Arbaro,
        "european_larch",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/european_larch_2.xml",
        Arbaro,
        "european_larch",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/fanpalm_1.xml",
        Arbaro,
        "fanpalm",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/oak_1.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/oak_2.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/oak_3.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/rain_1.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/rain_2.xml",
        Arbaro,
        "black_tupelo",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/sassafras_1.xml",
        Arbaro,
        "sassafras",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/sassafras_2.xml",
        Arbaro,
        "sassafras",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/shave-grass_1.xml",
        Arbaro,
        "shave_grass",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/tamarack_1.xml",
        Arbaro,
        "tamarack",
    ),
    (
        "arbaro-xml/shamanDevel-ProceduralTerrain/weeping_willow_1.xml",
        Arbaro,
        "weeping_willow",
    ),
    ("arbaro-xml/wdiestel-arbaro/barley.xml", Arbaro, "barley"),
    ("arbaro-xml/wdiestel-arbaro/black_tupelo.xml", Arbaro, "black_tupelo"),
    ("arbaro-xml/wdiestel-arbaro/ca_black_oak.xml", Arbaro, "ca_black_oak"),
    ("arbaro-xml/wdiestel-arbaro/desert_bush.xml", Arbaro, "desert_bush"),
    (
        "arbaro-xml/wdiestel-arbaro/eastern_cottonwood.xml",
        Arbaro,
        "eastern_cottonwood",
    ),
    (
        "arbaro-xml/wdiestel-arbaro/european_larch.xml",
        Arbaro,
        "european_larch",
    ),
    ("arbaro-xml/wdiestel-arbaro/fanpalm.xml", Arbaro, "fanpalm"),
    (
        "arbaro-xml/wdiestel-arbaro/lombardy_poplar.xml",
        Arbaro,
        "lombardy_poplar",
    ),
    ("arbaro-xml/wdiestel-arbaro/palm.xml", Arbaro, "palm"),
    ("arbaro-xml/wdiestel-arbaro/quaking_aspen.xml", Arbaro, "quaking_aspen"),
    ("arbaro-xml/wdiestel-arbaro/rush.xml", Arbaro, "rush"),
    ("arbaro-xml/wdiestel-arbaro/sassafras.xml", Arbaro, "sassafras"),
    ("arbaro-xml/wdiestel-arbaro/shave-grass.xml", Arbaro, "shave_grass"),
    ("arbaro-xml/wdiestel-arbaro/tamarack.xml", Arbaro, "tamarack"),
    ("arbaro-xml/wdiestel-arbaro/test/arbaro_icon.xml", Arbaro, "arbaro_icon"),
    ("arbaro-xml/wdiestel-arbaro/test/attraction.xml", Arbaro, "attraction"),
    (
        "arbaro-xml/wdiestel-arbaro/test/bottle_brush.xml",
        Arbaro,
        "bottle_brush",
    ),
    ("arbaro-xml/wdiestel-arbaro/test/feather.xml", Arbaro, "feather"),
    ("arbaro-xml/wdiestel-arbaro/test/small.xml", Arbaro, "default"),
    ("arbaro-xml/wdiestel-arbaro/test/small_split.xml", Arbaro, "default"),
    ("arbaro-xml/wdiestel-arbaro/test/test", Arbaro, "default"),
    ("arbaro-xml/wdiestel-arbaro/test/test2", Arbaro, "default"),
    (
        "arbaro-xml/wdiestel-arbaro/weeping_willow.xml",
        Arbaro,
        "weeping_willow",
    ),
    ("arbaro-xml/wdiestel-arbaro/wheat.xml", Arbaro, "wheat"),
    ("sapling-py/abpy-sapling_4/Default Tree.py", Sapling4, "Default Tree"),
    ("sapling-py/abpy-sapling_4/Small Pine.py", Sapling4, "Small Pine"),
    ("sapling-py/abpy-sapling_4/White Birch.py", Sapling4, "White Birch"),
    (
        "sapling-py/blender-addons-v0.2-legacy/black_tupelo.py",
        SaplingV02,
        "black_tupelo",
    ),
    (
        "sapling-py/blender-addons-v0.2-legacy/ca_black_oak.py",
        SaplingV02,
        "ca_black_oak",
    ),
    (
        "sapling-py/blender-addons-v0.2-legacy/quaking_aspen.py",
        SaplingV02,
        "quaking_aspen",
    ),
    (
        "sapling-py/blender-addons-v0.2-legacy/weeping_willow.py",
        SaplingV02,
        "weeping_willow",
    ),
    ("sapling-py/blender-addons-v0.2-legacy/willow.py", SaplingV02, "willow"),
    (
        "sapling-py/blender-addons-v0.3/callistemon.py",
        SaplingV03,
        "callistemon",
    ),
    (
        "sapling-py/blender-addons-v0.3/douglas_fir.py",
        SaplingV03,
        "douglas_fir",
    ),
    (
        "sapling-py/blender-addons-v0.3/japanese_maple.py",
        SaplingV03,
        "japanese_maple",
    ),
    (
        "sapling-py/blender-addons-v0.3/quaking_aspen.py",
        SaplingV03,
        "quaking_aspen",
    ),
    (
        "sapling-py/blender-addons-v0.3/small_maple.py",
        SaplingV03,
        "small_maple",
    ),
    ("sapling-py/blender-addons-v0.3/small_pine.py", SaplingV03, "small_pine"),
    (
        "sapling-py/blender-addons-v0.3/weeping_willow.py",
        SaplingV03,
        "weeping_willow",
    ),
    (
        "sapling-py/blender-addons-v0.3/white_birch.py",
        SaplingV03,
        "white_birch",
    ),
    ("sapling-py/blender-addons-v0.3/willow.py", SaplingV02, "willow"),
    ("treegen-py/acer.py", TreeGen, "acer"),
    ("treegen-py/apple.py", TreeGen, "apple"),
    ("treegen-py/balsam_fir.py", TreeGen, "balsam_fir"),
    ("treegen-py/bamboo.py", TreeGen, "bamboo"),
    ("treegen-py/black_oak.py", TreeGen, "black_oak"),
    ("treegen-py/black_tupelo.py", TreeGen, "black_tupelo"),
    ("treegen-py/cambridge_oak.py", TreeGen, "cambridge_oak"),
    ("treegen-py/douglas_fir.py", TreeGen, "douglas_fir"),
    ("treegen-py/european_larch.py", TreeGen, "european_larch"),
    ("treegen-py/fan_palm.py", TreeGen, "fan_palm"),
    ("treegen-py/hill_cherry.py", TreeGen, "hill_cherry"),
    ("treegen-py/lombardy_poplar.py", TreeGen, "lombardy_poplar"),
    ("treegen-py/palm.py", TreeGen, "palm"),
    ("treegen-py/quaking_aspen.py", TreeGen, "quaking_aspen"),
    ("treegen-py/sassafras.py", TreeGen, "sassafras"),
    ("treegen-py/silver_birch.py", TreeGen, "silver_birch"),
    ("treegen-py/small_pine.py", TreeGen, "small_pine"),
    ("treegen-py/sphere_tree.py", TreeGen, "sphere_tree"),
    ("treegen-py/weeping_willow.py", TreeGen, "weeping_willow"),
    ("treegen-py/weeping_willow_o.py", TreeGen, "weeping_willow_o"),
];

const HELIOS_2026: [&str; 9] = [
    "Almond",
    "Apple",
    "Avocado",
    "Lemon",
    "Olive",
    "Orange",
    "Peach",
    "Pistachio",
    "Walnut",
];
const HELIOS_2018: [&str; 17] = [
    "Almond",
    "QuakingAspen",
    "BlackOak",
    "BlackTupelo",
    "Apple",
    "Olive",
    "Lemon",
    "Orange",
    "Grapefruit",
    "Persimmon",
    "Pear",
    "Peach",
    "Apricot",
    "Plum",
    "Avocado",
    "Walnut",
    "Kiwifruit",
];

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_every_file_loads_with_its_species_and_format() {
    let files = all_files();
    assert_eq!(files.len(), SINGLE.len() + 2, "files in shared/data/tree-specs");
    let mut species = 0;
    let mut by_format = std::collections::BTreeMap::new();
    for path in &files {
        let lib = load_file(path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!lib.species.is_empty());
        species += lib.species.len();
        *by_format.entry(format!("{:?}", lib.format)).or_insert(0) += lib.species.len();
        for s in &lib.species {
            s.validate(&lib.file).unwrap();
        }
    }
    // 49 Arbaro files, 6 + 8 + 3 Sapling presets (willow.py of the 0.3 folder is 0.2 schema),
    // 20 tree-gen modules, 9 + 17 Helios species.
    assert_eq!(species, 49 + 17 + 20 + 9 + 17);
    let expected = [
        ("Arbaro", 49),
        ("Helios", 26),
        ("Sapling4", 3),
        ("SaplingV02", 6),
        ("SaplingV03", 8),
        ("TreeGen", 20),
    ];
    let got: Vec<(&str, usize)> = by_format.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, expected);

    for &(rel, format, name) in SINGLE {
        let lib = load(rel);
        assert_eq!(lib.format, format, "{rel}");
        assert_eq!(lib.names(), vec![name], "{rel}");
        assert_eq!(lib.species[0].origin, format, "{rel}");
        assert_eq!(lib.pick(None).unwrap().species, name);
    }
    assert_eq!(load("helios-xml/WeberPennTreeLibrary.xml").names(), HELIOS_2026);
    assert_eq!(load("helios-xml/WeberPennTreeLibrary-2018.xml").names(), HELIOS_2018);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_arbaro_values_match_the_files() {
    let t = one("arbaro-xml/wdiestel-arbaro/black_tupelo.xml");
    assert_eq!(
        (t.levels, t.scale, t.scale_v, t.ratio, t.ratio_power),
        (4, 23.0, 5.0, 0.015, 1.3)
    );
    assert_eq!((t.shape, t.lobes, t.leaves), (4, 3, 6));
    assert_eq!(t.level[1].branches, 50);
    assert_eq!(t.level[2].branches, 25);
    assert_eq!(t.level[3].branches, 12);
    assert_eq!(t.level[0].curve_res, 10);
    assert_eq!(t.level[1].down_angle_v, -40.0);
    // AttractionUp acts on levels >= 2.
    assert_eq!(
        [
            t.level[1].attraction_up,
            t.level[2].attraction_up,
            t.level[3].attraction_up
        ],
        [0.0, 0.5, 0.5]
    );
    // Missing from the hand-written file: Arbaro's defaults, with a note.
    assert_eq!((t.prune_ratio, t.smooth, t.leaf_quality), (0.0, 0.5, 1.0));
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("defaults used") && n.contains("PruneRatio")));

    let willow = one("arbaro-xml/wdiestel-arbaro/weeping_willow.xml");
    assert_eq!(willow.level[3].attraction_up, -2.0);
    assert_eq!(willow.level[1].rotate, -120.0);
    assert_eq!(one("arbaro-xml/wdiestel-arbaro/fanpalm.xml").leaves, -80);
    assert_eq!(one("arbaro-xml/wdiestel-arbaro/palm.xml").leaf_shape, "palm");
    assert!(one("arbaro-xml/wdiestel-arbaro/test/feather.xml").flare < 0.0);
    assert!(one("arbaro-xml/wdiestel-arbaro/test/bottle_brush.xml").level[0].curve_v < 0.0);
    // No extension, XML inside, trunk only.
    let t2 = one("arbaro-xml/wdiestel-arbaro/test/test2");
    assert_eq!((t2.levels, t2.species.as_str()), (1, "default"));

    // ProceduralTerrain's extra params are kept, not refused.
    let oak = one("arbaro-xml/shamanDevel-ProceduralTerrain/oak_1.xml");
    assert_eq!(oak.species, "black_tupelo");
    assert_eq!(oak.extras["BarkTexture"], "bark0007.jpg");
    assert_eq!(oak.extras["LeafTextureRotation"], "135.0");
    assert_eq!(oak.leaf_shape, "square");
    assert!(oak.notes.iter().any(|n| n.contains("LeafTexture")));
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_sapling_values_match_the_files() {
    // v0.3: per-level attractUp, rootFlare, reversed down-angle variation.
    let fir = one("sapling-py/blender-addons-v0.3/douglas_fir.py");
    assert_eq!(fir.origin, SaplingV03);
    let attract: Vec<f64> = fir.level.iter().map(|l| l.attraction_up).collect();
    assert_eq!(attract, [0.0, 0.35, 0.25, 0.15]);
    assert_eq!(fir.flare, 0.3);
    assert_eq!(fir.scale, 35.0);
    assert_eq!(fir.level[1].down_angle, 130.0);
    assert_eq!(fir.semantics.down_angle_v, DownAngleV::SaplingReversed);
    assert_eq!(fir.custom_shape, Some([0.5, 1.0, 0.35, 0.1]));
    assert_eq!(fir.shape_deep, Some(7));
    assert_eq!(fir.level[0].branches, 1);
    assert_eq!(fir.extras["branchDist"], "1.85");
    assert_eq!(fir.extras["rMode"], "'rotate'");
    // Levels 4: level 3 holds the stems' rotation, the leaves' goes to extras.
    assert_eq!(fir.level[3].rotate, -60.0);
    assert_eq!(fir.extras["leafRotate"], "137.5");
    let callistemon = one("sapling-py/blender-addons-v0.3/callistemon.py");
    assert_eq!(callistemon.semantics.down_angle_v, DownAngleV::Paper);
    // Levels 2: the leaf level is 2 and takes the leaf keys.
    assert_eq!(callistemon.levels, 2);
    assert_eq!(callistemon.level[2].down_angle, 30.0);
    assert_eq!(callistemon.level[2].down_angle_v, -10.0);
    assert_eq!(callistemon.level[2].rotate_v, 15.0);
    assert_eq!(one("sapling-py/blender-addons-v0.3/japanese_maple.py").leaves, -5);

    // v0.2 black tupelo carries the numbers of Arbaro's (and the paper's) black tupelo.
    let a = one("arbaro-xml/wdiestel-arbaro/black_tupelo.xml");
    let s = one("sapling-py/blender-addons-v0.2-legacy/black_tupelo.py");
    assert_eq!(s.origin, SaplingV02);
    assert_eq!(
        (s.scale, s.scale_v, s.ratio, s.ratio_power, s.shape, s.levels),
        (a.scale, a.scale_v, a.ratio, a.ratio_power, a.shape, a.levels)
    );
    for n in 0..4 {
        assert_eq!(s.level[n].length, a.level[n].length, "{n}Length");
        assert_eq!(s.level[n].curve_res, a.level[n].curve_res, "{n}CurveRes");
        if n > 0 {
            assert_eq!(s.level[n].branches, a.level[n].branches, "{n}Branches");
        }
    }
    assert_eq!(s.level[2].attraction_up, 0.5);
    assert_eq!(s.level[1].attraction_up, 0.0);
    assert_eq!(s.prune_ratio, 0.0, "prune is False");

    // willow.py: v0.2 schema in the v0.3 folder, leaves written as 15.0.
    let willow = one("sapling-py/blender-addons-v0.2-legacy/willow.py");
    assert_eq!((willow.origin, willow.leaves), (SaplingV02, 15));
    assert_eq!(one("sapling-py/blender-addons-v0.3/willow.py").origin, SaplingV02);

    let default_tree = one("sapling-py/abpy-sapling_4/Default Tree.py");
    assert_eq!(
        (default_tree.origin, default_tree.species.as_str()),
        (Sapling4, "Default Tree")
    );
    assert_eq!(default_tree.prune_ratio, 0.0);
    assert_eq!(default_tree.extras["attachment"], "'0'");
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_treegen_values_merge_over_treegen_defaults() {
    let bamboo = one("treegen-py/bamboo.py");
    assert_eq!(bamboo.origin, TreeGen);
    assert_eq!((bamboo.levels, bamboo.scale, bamboo.level[0].branches), (2, 10.0, 50));
    // 'leaves' is not a tree-gen key: leaf_blos_num keeps tree-gen's default 40.
    assert_eq!(bamboo.leaves, 40);
    assert!(bamboo
        .notes
        .iter()
        .any(|n| n.contains("leaves = 20") && n.contains("ignored")));
    // Missing keys take tree-gen's defaults (not Arbaro's 0.5 ... they agree here) and extras
    // hold tree-gen's own parameters.
    assert_eq!(bamboo.extras["bend_v"], "[0.0, 50.0, 0.0, 0.0]");
    assert_eq!(bamboo.level[2].attraction_up, 0.0);

    let aspen = one("treegen-py/quaking_aspen.py");
    assert_eq!(aspen.level[1].base_size, 0.02);
    assert_eq!(aspen.level[2].attraction_up, 0.5);
    assert_eq!(aspen.flare, 0.6);

    let acer = one("treegen-py/acer.py");
    assert_eq!(acer.base_splits, -2);
    assert_eq!((acer.base_size, acer.level[1].base_size), (0.1, 0.4));
    assert_eq!(acer.leaf_shape, "5");
    assert!(acer.notes.iter().any(|n| n == "docstring: ACER"));
    let pine = one("treegen-py/small_pine.py");
    assert_eq!((pine.level[1].split_angle, pine.level[1].split_angle_v), (-80.0, -30.0));
    assert_eq!(one("treegen-py/fan_palm.py").leaves, -90);
    let willow = one("treegen-py/weeping_willow.py");
    assert_eq!(willow.level[3].attraction_up, -3.0);
    assert_eq!(willow.prune_ratio, 1.0);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_helios_values_match_the_files() {
    let lib = load("helios-xml/WeberPennTreeLibrary-2018.xml");
    assert_eq!(lib.format, Helios);
    let aspen = lib.pick(Some("QuakingAspen")).unwrap();
    assert_eq!(aspen.levels, 4);
    assert_eq!(aspen.level[3].rotate, 77.0);
    assert_eq!(aspen.level[3].curve_res, 3);
    assert!(aspen.notes.iter().any(|n| n.contains("Levels 4") && n.contains("1..3")));
    assert!(aspen.notes.iter().any(|n| n.contains("declaration")));
    assert_eq!(aspen.extras["WoodColor"], "0.9 0.9 0.9");
    let orange = lib.pick(Some("Orange")).unwrap();
    assert_eq!(orange.level[3].rotate, 90.0);
    assert!(orange.notes.iter().any(|n| n.contains("nRotate (5 values)")));

    let lib = load("helios-xml/WeberPennTreeLibrary.xml");
    let almond = lib.pick(Some("Almond")).unwrap();
    assert_eq!(
        (almond.shape, almond.base_splits, almond.base_split_size),
        (6, 3, Some(0.2))
    );
    assert_eq!((almond.z_scale, almond.ratio), (0.0, 0.0225));
    assert_eq!(almond.level[1].down_angle, -60.0);
    assert_eq!(almond.extras["LeafFile"], "plugins/weberpenntree/leaves/AlmondLeaf.png");
    assert!(!almond.extras.contains_key("LeafAngleDist"), "commented out");
    let olive = lib.pick(Some("Olive")).unwrap();
    assert_eq!(olive.level[0].branches, 1);
    assert!(olive.notes.iter().any(|n| n.contains("nBranches[0] = 40")));
    let apple = lib.pick(Some("Apple")).unwrap();
    assert_eq!(apple.level[0].length, 1.0, "'1.' reads as 1");
    assert_eq!(lib.pick(Some("Pistachio")).unwrap().levels, 2);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_sylva_text_round_trips_every_loaded_spec() {
    let mut count = 0;
    for path in all_files() {
        let lib = load_file(&path).unwrap();
        for spec in &lib.species {
            let written = text::write(spec);
            let back = text::parse(&written, "round-trip.sylva").unwrap_or_else(|e| panic!("{e}\n{written}"));
            let mut a = spec.clone();
            let mut b = back;
            a.notes.clear();
            b.notes.clear();
            assert_eq!(a, b, "{}: {}", path.display(), spec.species);
            // Detected by content and loaded as a Sylva file.
            let again = load_str(&written, "x.sylva").unwrap();
            assert_eq!(again.format, Sylva);
            assert_eq!(again.species[0].origin, spec.origin);
            count += 1;
        }
    }
    assert_eq!(count, 112);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_format_is_told_by_content_not_extension() {
    let text = std::fs::read_to_string(data_dir().join("arbaro-xml/wdiestel-arbaro/tamarack.xml")).unwrap();
    assert_eq!(load_str(&text, "tamarack.py").unwrap().format, Arbaro);
    let text = std::fs::read_to_string(data_dir().join("treegen-py/palm.py")).unwrap();
    assert_eq!(load_str(&text, "palm.xml").unwrap().format, TreeGen);
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

fn arbaro_with(name: &str, value: &str) -> String {
    let text = std::fs::read_to_string(data_dir().join("arbaro-xml/wdiestel-arbaro/quaking_aspen.xml")).unwrap();
    let needle = format!("<param name='{name}' value='");
    let start = text.find(&needle).expect(name) + needle.len();
    let end = start + text[start..].find('\'').unwrap();
    format!("{}{}{}", &text[..start], value, &text[end..])
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_errors_name_file_parameter_and_allowed_values() {
    // Truncated XML.
    let text = std::fs::read_to_string(data_dir().join("arbaro-xml/wdiestel-arbaro/black_tupelo.xml")).unwrap();
    let e = load_str(&text[..text.len() / 2], "cut.xml").unwrap_err();
    assert_eq!(e.file, "cut.xml");
    assert!(e.parameter.starts_with("line "), "{e}");
    assert!(
        e.message.contains("malformed XML") && e.message.contains("allowed"),
        "{e}"
    );

    // Levels as "3.0": Arbaro reads integers with Integer.parseInt.
    let e = load_str(&arbaro_with("Levels", "3.0"), "aspen.xml").unwrap_err();
    assert_helpful(&e, "aspen.xml", "Levels", &["3.0", "integer"]);
    // NaN.
    let e = load_str(&arbaro_with("Scale", "NaN"), "aspen.xml").unwrap_err();
    assert_helpful(&e, "aspen.xml", "Scale", &["NaN", "> 0"]);
    // A negative length.
    let e = load_str(&arbaro_with("1Length", "-0.3"), "aspen.xml").unwrap_err();
    assert_helpful(&e, "aspen.xml", "1Length", &["-0.3", "> 0"]);
    // 1e9 branches.
    let e = load_str(&arbaro_with("1Branches", "1000000000"), "aspen.xml").unwrap_err();
    assert_helpful(&e, "aspen.xml", "1Branches", &["1000000000", "10000"]);
    let e = load_str(&arbaro_with("Shape", "9"), "aspen.xml").unwrap_err();
    assert_helpful(&e, "aspen.xml", "Shape", &["9", "8"]);

    // Unknown species, and none named in a library of many.
    let lib = load("helios-xml/WeberPennTreeLibrary.xml");
    let e = lib.pick(Some("Banana")).unwrap_err();
    assert_helpful(&e, &lib.file, "species", &["Banana", "Almond", "Walnut"]);
    let e = lib.pick(None).unwrap_err();
    assert_helpful(&e, &lib.file, "species", &["9 species", "Pistachio"]);

    // An unknown key in a Sylva file.
    let spec = one("arbaro-xml/wdiestel-arbaro/quaking_aspen.xml");
    let written = text::write(&spec).replace("LeafBend = ", "LeafBent = ");
    let e = load_str(&written, "aspen.sylva").unwrap_err();
    assert_helpful(&e, "aspen.sylva", "LeafBent", &["unknown key", "line "]);

    // Helios: too few list values.
    let helios = std::fs::read_to_string(data_dir().join("helios-xml/WeberPennTreeLibrary.xml")).unwrap();
    let bad = helios.replacen("<nLength>1 0.65 0.55 0.3</nLength>", "<nLength>1 0.65</nLength>", 1);
    let e = load_str(&bad, "lib.xml").unwrap_err();
    assert_helpful(&e, "lib.xml", "nLength", &["Almond", "line "]);
    // (tree-gen's and Sapling's malformed values, and text of no format, need no corpus: they
    // are checked in spec_fixtures.rs.)
}

#[test]
fn oversized_and_non_utf8_files_are_refused() {
    let dir = std::env::temp_dir().join(format!("sylva-spec-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.xml");
    let mut text = String::from("<?xml version='1.0' ?>\n<arbaro>\n<!--");
    text.push_str(&"x".repeat(20 * 1024 * 1024));
    text.push_str("-->\n</arbaro>\n");
    std::fs::write(&big, &text).unwrap();
    let e = load_file(&big).unwrap_err();
    assert_helpful(&e, &big.display().to_string(), "file size", &["16 MiB"]);
    let e = load_str(&text, "big.xml").unwrap_err();
    assert_eq!(e.parameter, "file size");
    assert!(text.len() as u64 > MAX_FILE_BYTES);

    let latin1 = dir.join("latin1.xml");
    std::fs::write(&latin1, b"<arbaro><species name='\xe9rable'/></arbaro>").unwrap();
    let e = load_file(&latin1).unwrap_err();
    assert_helpful(&e, &latin1.display().to_string(), "encoding", &["UTF-8"]);
    let missing = dir.join("missing.xml");
    assert_eq!(load_file(&missing).unwrap_err().parameter, "file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_truncated_real_files_never_panic() {
    // Every prefix at a stride, and every file with one byte changed at a stride: errors or
    // specs, never a panic.
    for path in all_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let stride = (text.len() / 150).max(1);
        for cut in (0..text.len()).step_by(stride).filter(|&c| text.is_char_boundary(c)) {
            let _ = load_str(&text[..cut], &name);
        }
        let mut bytes = text.clone().into_bytes();
        for i in (0..bytes.len()).step_by(stride * 2) {
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
