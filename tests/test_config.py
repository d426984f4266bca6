"""Game configs: profiles are valid, and every bad value is rejected naming its field and rule."""

from pathlib import Path

import pytest

from engine.config import ConfigError, PROFILES, load_config, make_config, position_names, profile, with_overrides


@pytest.mark.parametrize("name", list(PROFILES))
def test_profiles_are_valid(name):
    cfg = profile(name)
    assert cfg.name == name and sum(cfg.start) == cfg.units and len(cfg.start) == cfg.players


def test_thesis_profile_matches_spec():
    cfg = profile("thesis")
    assert (cfg.players, cfg.units, cfg.payouts, cfg.gamma, cfg.start) == (5, 45, (50, 30, 20), 1e-4, (9, 9, 9, 9, 9))
    assert cfg.fgs_depth == 10  # FGS-1 … 10
    assert cfg.rollout_id("pairs") == cfg.rollout_id("triples") == "exact"


def test_gs08_profile_matches_spec():
    """SPEC §8: the Ganzfried–Sandholm 2008 game, 3 players, 45 units, 50/30/20 (issue #3: to gamma $0.0001)."""
    cfg = profile("gs08")
    assert (cfg.players, cfg.units, cfg.payouts, cfg.gamma) == (3, 45, (50, 30, 20), 1e-4)
    assert cfg.rollout_id("pairs") == cfg.rollout_id("triples") == "exact"


def test_quick_uses_sampled_triples_with_recorded_id():
    quick = profile("quick")
    assert quick.rollout_id("triples") == "sampled-2000-seed1" and quick.rollout_id("pairs") == "exact"
    assert (quick.rollout_boards("pairs"), quick.rollout_boards("triples")) == (None, 2000)
    assert profile("thesis").rollout_boards("triples") is None


@pytest.mark.parametrize("overrides, field", [
    (dict(payouts=(30, 50, 20)), "payouts"),
    (dict(payouts=(50, 30, 20, 10, 5, 1)), "payouts"),
    (dict(payouts=(50, -1)), "payouts"),
    (dict(payouts=()), "payouts"),
    (dict(payouts=("a", 1)), "payouts"),
    (dict(payouts=(float("nan"),)), "payouts"),
    (dict(payouts=(1e308, 1e308)), "payouts"),  # each finite, the prize pool not
    (dict(players=1), "players"),
    (dict(players=6), "players"),
    (dict(players=2.5), "players"),
    (dict(units=2), "units"),
    (dict(units=-45), "units"),
    (dict(gamma=0), "gamma"),
    (dict(gamma=-1e-4), "gamma"),
    (dict(gamma="small"), "gamma"),
    (dict(gamma=1e-300), "gamma"),  # below float64 rounding of the values: the solve would run into its caps
    (dict(start=(9, 9, 9, 9)), "start"),
    (dict(start=(9, 9, 9, 9, 8)), "start"),
    (dict(start=(0, 9, 9, 9, 18)), "start"),
    (dict(rollout_triples="guess"), "rollout_triples"),
    (dict(rollout_samples=0), "rollout_samples"),
    (dict(rollout_samples=3_000_000_000), "rollout_samples"),  # would never finish (and overflow its column)
    (dict(rollout_seed=2**63), "rollout_seed"),  # past numpy's seed range: failed in the rollout asset
    (dict(simulation_seed=10**13), "simulation_seed"),  # its sub-seeds overflowed BIGINT after the simulations
    (dict(examples=[]), "examples"),  # the model tables' pd.concat([]) failed after computing them
    (dict(examples=[[1e308, 1e308]]), "examples[0]"),  # the equity models over- or underflow
    (dict(examples=[[2, 5], [1e-320, 1]]), "examples[1]"),
    (dict(fgs_depth=-1), "fgs_depth"),
    (dict(fgs_depth=2.5), "fgs_depth"),
    (dict(simulation_tournaments=10), "simulation_tournaments"),
    (dict(simulation_tournaments="many"), "simulation_tournaments"),
    (dict(direct_match_tournaments=999), "direct_match_tournaments"),
    (dict(direct_match_tournaments=-1), "direct_match_tournaments"),
    (dict(direct_match_tournaments=2.5), "direct_match_tournaments"),
    (dict(simulation_seed=-3), "simulation_seed"),
    (dict(name="Bad Name!"), "name"),
    (dict(bogus=1), "bogus"),
])
def test_bad_values_name_field_and_rule(overrides, field):
    with pytest.raises(ConfigError) as info:
        profile("thesis", **overrides)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ") and len(info.value.rule) > 10


@pytest.mark.parametrize("field, accepted, refused", [
    ("rollout_samples", [1, 1_000_000], [0, 1_000_001]),
    ("rollout_seed", [0, 2**63 - 1], [-1, 2**63]),
    ("fgs_depth", [0, 20], [-1, 21]),
    ("simulation_tournaments", [1000, 10**10], [999, 10**10 + 1]),
    ("direct_match_tournaments", [0, 1000, 10**10], [1, 999, 10**10 + 1]),
])
def test_each_ranges_ends_are_accepted_and_the_next_values_out_refused(field, accepted, refused):
    """The ends of each range the rules state (e.g. "from 1,000 to 10^10") are in it, the next
    whole numbers out of it are not."""
    for value in accepted:
        assert getattr(profile("thesis", **{field: value}), field) == value
    for value in refused:
        with pytest.raises(ConfigError) as info:
            profile("thesis", **{field: value})
        assert info.value.field == field


@pytest.mark.parametrize("overrides, field, rule", [
    (dict(gamma=0), "gamma", "must be a finite number > 0"),  # not the rule for a tiny gamma
    (dict(start="9 9 9 9 9"), "start", "must be a list of numbers"),  # not taken character by character
    (dict(payouts="50"), "payouts", "must be a list of numbers"),
    (dict(payouts=b"50"), "payouts", "must be a list of numbers"),
    (dict(start=9), "start", "must be a list of numbers"),
])
def test_a_value_of_the_wrong_kind_gets_the_rule_it_breaks(overrides, field, rule):
    with pytest.raises(ConfigError) as info:
        profile("thesis", **overrides)
    assert info.value.field == field and info.value.rule.startswith(rule)


def test_every_model_seed_stays_within_what_simulate_seed_accepts():
    from assets.simulation import model_seed
    from engine.config import MAX_SIMULATION_SEED
    from engine.config import model_names

    top = MAX_SIMULATION_SEED - 1000 * (3 + 10)  # thesis: the ICM family and FGS-1 … FGS-10
    cfg = profile("thesis", simulation_seed=top)
    assert max(model_seed(cfg, m) for m in model_names(cfg.fgs_depth)) == MAX_SIMULATION_SEED
    with pytest.raises(ConfigError) as info:
        profile("thesis", simulation_seed=top + 1)
    assert info.value.field == "simulation_seed" and f"at most {top:,} with fgs_depth 10" in str(info.value)
    assert profile("thesis", simulation_seed=top + 1000, fgs_depth=9).simulation_seed == top + 1000


def test_more_places_than_players_says_when_the_extra_ones_pay_nothing():
    with pytest.raises(ConfigError) as info:
        profile("quick", players=3, payouts=(100, 0, 0, 0))
    assert info.value.field == "payouts" and "lists 4 places but the game has only 3 players (leave out" in str(info.value)
    with pytest.raises(ConfigError) as info:
        profile("quick", players=3, payouts=(50, 30, 15, 5))
    assert "lists 4 places but the game has only 3 players" in str(info.value) and "leave out" not in str(info.value)


def test_paid_places_drop_the_trailing_places_that_pay_nothing_but_keep_the_first():
    from engine.config import paid_places

    assert paid_places((50, 30, 20, 0, 0)) == [50.0, 30.0, 20.0]
    assert paid_places((100, 0, 0)) == [100.0]  # winner takes all: one place
    assert paid_places((0.0,)) == [0.0]
    assert paid_places((60, 0, 40)) == [60.0, 0.0, 40.0]  # only trailing places go
    assert profile("quick", payouts=(50, 30, 20, 0)).solve_key() == profile("quick").solve_key()


def test_unknown_profile():
    with pytest.raises(ConfigError, match="profile: unknown profile"):
        profile("huge")


def test_load_config_from_toml(tmp_path):
    path = tmp_path / "My-Game.toml"
    path.write_text('profile = "quick"\nplayers = 4\nunits = 24\npayouts = [60, 40]\n')
    cfg = load_config(path)
    assert (cfg.name, cfg.players, cfg.units, cfg.payouts, cfg.start) == ("my-game", 4, 24, (60, 40), (6, 6, 6, 6))
    assert cfg.rollout_triples == "sampled"  # inherited from the profile


def test_load_config_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("players = [\n")
    with pytest.raises(ConfigError, match="config: is not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="config: file not found"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="config: is not a regular file"):
        load_config("/dev/null")
    if Path("/proc/self/mem").exists():  # a file that exists but cannot be read whole: OSError, not a traceback
        with pytest.raises(ConfigError, match="config: cannot be read"):
            load_config("/proc/self/mem")
    bad.write_text("players = 3\nunits = 10\nstart = [5, 5]\n")
    with pytest.raises(ConfigError, match="start: must list one stack per player"):
        load_config(bad)


def test_overrides_get_a_new_name_and_equal_start():
    cfg = with_overrides(profile("quick"), units=25)
    assert cfg.name != "quick" and cfg.name.startswith("quick-") and cfg.start == (5, 5, 5, 5, 5)
    assert with_overrides(profile("quick")) == profile("quick")


def test_fields_given_their_own_values_are_no_override():
    """`--gamma 0.001` on `quick` (its own gamma), `--payouts 50 30 20` as floats or `--start` equal to
    the start: the same game under the same name, not a second one (`quick-ee204a`). Beside a real
    override they stay overrides, validated with it: the old start with new units is refused, not
    dropped for equal stacks."""
    quick = profile("quick")
    for same in ({"gamma": quick.gamma}, {"payouts": [50.0, 30.0, 20.0]}, {"start": list(quick.start)},
                 {"players": 5, "units": 10, "fgs_depth": quick.fgs_depth}):
        assert with_overrides(quick, **same) == quick, same
    assert with_overrides(quick, gamma=0.002).name != "quick"
    with pytest.raises(ConfigError, match="^start: "):
        with_overrides(quick, units=12, start=list(quick.start))


def test_uneven_equal_start():
    assert make_config(players=3, units=10).start == (4, 3, 3)


def test_position_names():
    assert position_names(2) == ("SB", "BB")
    assert position_names(3) == ("BU", "SB", "BB")
    assert position_names(5) == ("HJ", "CO", "BU", "SB", "BB")
    assert position_names(7) == ("UTG", "MP", "HJ", "CO", "BU", "SB", "BB")  # named up to 7
    with pytest.raises(ConfigError, match="players: positions are named for 2 to 7 players"):
        position_names(8)


def test_checkpoints_do_not_depend_on_analysis_fields():
    """Changing FGS depth or simulation size must not throw away a finished equilibrium solve."""
    base = profile("quick")
    assert profile("quick", fgs_depth=5, simulation_tournaments=5000, simulation_seed=9).solve_key() == base.solve_key()
    assert profile("quick", direct_match_tournaments=3000).solve_key() == base.solve_key()
    assert profile("quick", gamma=1e-4).solve_key() != base.solve_key()


def test_direct_match_tournaments_default_to_the_hero_seats_count():
    assert profile("quick").match_tournaments == profile("quick").simulation_tournaments == 200_000
    assert profile("quick", direct_match_tournaments=3000).match_tournaments == 3000
    assert profile("thesis").match_tournaments == 10_000_000  # 30 seatings a match: 300 million
    assert profile("thesis").simulation_tournaments == 100_000_000


def test_load_config_rejects_what_is_not_a_utf8_toml_file(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\n")
    with pytest.raises(ConfigError, match="config: is not a UTF-8 text file"):
        load_config(binary)
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(ConfigError, match="config: is a folder"):
        load_config(folder)
    with pytest.raises(ConfigError, match="config: is empty"):
        load_config("")
    listed = tmp_path / "listed.toml"
    for value in ('["quick"]', "{ a = 1 }", '""'):
        listed.write_text(f"profile = {value}\n")
        with pytest.raises(ConfigError, match="profile: unknown profile"):
            load_config(listed)


def test_integers_past_what_a_float_holds_are_refused_by_name(tmp_path):
    """TOML integers have no size limit: a 400-digit one in a number field, or a players count of
    10^20, is refused naming the field (it raised OverflowError, or built a start of 10^15 ones
    before the players rule ran), and the message shows the value cut short."""
    huge = 10 ** 400
    path = tmp_path / "huge.toml"
    fine = "payouts = [50, 30, 20]\n"
    for lines, field in ((f"payouts = [{huge}]\n", "payouts"), (f"{fine}gamma = {huge}\n", "gamma"),
                         (f"{fine}examples = [[1, {huge}]]\n", "examples[0]"),
                         (f"{fine}fgs_depth = {huge}\n", "fgs_depth")):
        path.write_text(f"players = 3\nunits = 10\n{lines}")
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        assert caught.value.field == field, lines
        assert len(str(caught.value)) < 400 and "… (40" in str(caught.value), str(caught.value)
    for players, units in ((10 ** 20, 10), (10 ** 15, 10), (10 ** 9, 2 * 10 ** 9)):  # (no start of 10^9 stacks)
        with pytest.raises(ConfigError, match="players: must be a whole number from 2 to 5"):
            make_config(players=players, units=units, payouts=[50])
    path.write_text(f"players = 3\nunits = 10\npayouts = [1{'0' * 5000}]\n")  # (Python's own limit: 4,300 digits)
    with pytest.raises(ConfigError, match="config: is not valid TOML"):
        load_config(path)


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes("\ufeffplayers = 3\nunits = 12\npayouts = [50, 30, 20]\n".encode("utf-8"))
    cfg = load_config(path)
    assert (cfg.name, cfg.players, cfg.units, cfg.start) == ("bom", 3, 12, (4, 4, 4))


def test_a_name_taken_from_the_file_name_says_so(tmp_path):
    path = tmp_path / "Game(1).toml"
    path.write_text("players = 2\nunits = 10\npayouts = [1]\n")
    with pytest.raises(ConfigError, match=r"^name: .*taken from the file name") as info:
        load_config(path)
    assert info.value.value == "game(1)"
    path.write_text('name = "Game(1)"\nplayers = 2\nunits = 10\npayouts = [1]\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "file name" not in str(info.value)  # the user wrote this one


def test_a_config_may_not_take_a_profiles_name_with_other_fields(tmp_path):
    """Its rows would replace the profile's results in the warehouse (they are keyed by name)."""
    by_file = tmp_path / "quick.toml"
    by_file.write_text("players = 2\nunits = 10\npayouts = [1]\n")
    with pytest.raises(ConfigError, match=r"^name: 'quick' \(the config's file name\) is a built-in profile's"):
        load_config(by_file)
    by_name = tmp_path / "mine.toml"
    by_name.write_text('name = "thesis"\nprofile = "thesis"\ngamma = 0.01\n')
    with pytest.raises(ConfigError, match=r"^name: 'thesis' \(the config's name\)"):
        load_config(by_name)
    by_name.write_text('name = "thesis"\nprofile = "thesis"\n')  # the profile itself, spelled out: fine
    assert load_config(by_name) == profile("thesis")
    by_file.write_text('profile = "quick"\n')
    assert load_config(by_file) == profile("quick")


def test_an_override_of_a_long_named_game_keeps_a_valid_name():
    """Overrides name the game ``<name>-<digest>``: a 40-character name is cut to make room, where it
    had made every flag fail naming a name the user never typed."""
    cfg = make_config(name="a" * 40, players=3, units=10, payouts=(70, 30))
    changed = with_overrides(cfg, gamma=0.002)
    assert len(changed.name) == 40 and changed.name.startswith("a" * 33 + "-") and changed.gamma == 0.002
    assert with_overrides(cfg, gamma=0.003).name != changed.name  # (the digest tells the games apart)


ALL_THREE = "players, units, payouts"


@pytest.mark.parametrize("text,missing", [("", ALL_THREE), ("gamma = 0.01\n", ALL_THREE),
                                          ("players = 3\nunits = 10\n", "payouts")])
def test_a_config_without_a_profile_must_set_the_game(tmp_path, text, missing):
    """The defaults would otherwise make it a 5-player, 45-unit game: hours of solving nobody asked for."""
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"^config: must set the game's {ALL_THREE} \(missing: {missing}\)"):
        load_config(path)
    path.write_text('profile = "quick"\n' + text)  # from a profile, any subset
    assert load_config(path).units == 10


@pytest.mark.parametrize("payouts,gamma,field,rule", [
    ((1.7e308,), 1e300, "payouts", "must sum to a prize pool from 1e-06 to 1e+15 $"),
    ((1e-300,), 1e-310, "payouts", "must sum to a prize pool from 1e-06 to 1e+15 $"),
    ((60, 40), 100.0, "gamma", "must be below the prize pool (100 $)"),
    ((60, 40), 1e6, "gamma", "must be below the prize pool (100 $)"),
])
def test_prize_pools_out_of_float64s_reach_and_targets_above_the_pool_are_refused(payouts, gamma, field, rule):
    with pytest.raises(ConfigError) as info:
        make_config(players=3, units=10, payouts=payouts, gamma=gamma)
    assert info.value.field == field and info.value.rule.startswith(rule)
    make_config(players=3, units=10, payouts=(1e-6,), gamma=1e-15)  # the bounds themselves are games
    make_config(players=3, units=10, payouts=(1e15,), gamma=1e6)


@pytest.mark.parametrize("value,threads", [("3", 3), (" 1 ", 1), ("4096", 4096), ("", None), ("  ", None),
                                           ("abc", "error"), ("0", "error"), ("-2", "error"), ("1.5", "error"),
                                           ("4097", "error"), ("99999999999999999999", "error"), ("٢", "error"),
                                           ("+3", 3), ("9" * 5000, "error"), ("1_0", "error")])
def test_numba_num_threads_is_read_or_refused_by_name(monkeypatch, value, threads):
    """A whole number from 1 to 4096, or blank (then removed: numba would print a traceback for it)."""
    import os

    from engine.cores import configured_threads

    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    if threads == "error":
        with pytest.raises(ConfigError, match=r"^NUMBA_NUM_THREADS: must be a whole number of threads from 1 to 4096"):
            configured_threads()
    else:
        assert configured_threads() == (threads or os.cpu_count())
        assert ("NUMBA_NUM_THREADS" in os.environ) == (threads is not None)
        if value == "":  # an OS that cannot say how many cores it has: one
            monkeypatch.setattr(os, "cpu_count", lambda: None)
            assert configured_threads() == 1
