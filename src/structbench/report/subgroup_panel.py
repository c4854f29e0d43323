"""The subgroup forest's panel (docs/method.md §11, "Subgroups (moderators)"): one contrast's moderator sides and
levels with their CIs, and each moderator's interaction written beside them. Drawn by
:func:`structbench.report.figures.subgroup_forest`, which keeps the figure's place in the report's order; the
report's style reaches it as an argument, so this module imports nothing of the figures."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from structbench.report.formatting import p_text, signed


def interaction_text(row: dict, bootstrap_iters: int | None) -> str:
    """A moderator's interaction as the subgroup forest annotates it: Δ_A − Δ_B [CI], then p and Holm p, or why
    it was not tested."""
    text = f"A − B {signed(row['delta'], 3)} [{signed(row['ci_low'], 3)}, {signed(row['ci_high'], 3)}]"
    if not row["testable"]:
        return f"{text}\nnot testable"
    return f"{text}\n{p_text(row['p'], bootstrap_iters)}, Holm {p_text(row['p_holm'], bootstrap_iters)[2:]}"


def subgroup_panel(
    axes, rows: pl.DataFrame, moderators: list[str], bootstrap_iters: int | None, whole, series_style: Callable
) -> None:
    """One contrast's panel: a row per side or level, moderators top to bottom with a gap between them, and the
    interaction's numbers on a right-hand axis beside each moderator's rows; ``series_style(i)`` is the report's
    colour and marker of the ``i``-th series, ``whole`` the contrast's whole Δ (dotted) or None."""
    y, ticks, labels, notes = 0.0, [], [], []
    for index, moderator in enumerate(m for m in moderators if m in set(rows["moderator"].to_list())):
        group = rows.filter(pl.col("moderator") == moderator)
        style = series_style(index)
        first = y
        for row in group.filter(pl.col("kind") != "interaction").iter_rows(named=True):
            level = row["kind"] == "level"
            axes.plot([row["ci_low"], row["ci_high"]], [-y, -y], color=style["color"], linewidth=1.3)
            axes.plot(
                [row["delta"]],
                [-y],
                linestyle="none",
                marker="s" if level else "o",
                markersize=4.5 if level else 6,
                color=style["color"],
                markerfacecolor=style["color"] if row["testable"] else "white",
                markeredgewidth=1.2,
            )
            side = f"{row['level']} (in {row['group']})" if level else f"{moderator} · {row['group']}: {row['level']}"
            ticks.append(-y)
            labels.append(f"{side} (n={row['n_queries']}/{row['n_docs']})")
            y += 1
        interaction = group.filter(pl.col("kind") == "interaction").row(0, named=True)
        notes.append((-(first + y - 1) / 2, interaction_text(interaction, bootstrap_iters)))
        y += 1  # a gap before the next moderator
    axes.axvline(0.0, color="#777777", linewidth=0.8, zorder=0)
    if whole is not None and whole == whole:
        axes.axvline(whole, color="#777777", linewidth=0.9, linestyle=":", zorder=0)
    axes.set_yticks(ticks, labels)
    axes.set_ylim(-(y - 1) - 0.6, 0.6)
    axes.grid(axis="y", visible=False)
    numbers = axes.twinx()
    numbers.set_ylim(axes.get_ylim())
    numbers.set_yticks([at for at, _ in notes], [text for _, text in notes])
    numbers.tick_params(axis="y", length=0, labelsize=7)
    numbers.grid(False)
    for spine in ("top", "right", "left"):
        numbers.spines[spine].set_visible(False)
