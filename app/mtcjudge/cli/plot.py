"""The replay's figure: claimed confidence and achieved accuracy against judgments."""

from __future__ import annotations

from pathlib import Path

from mtcjudge.mtc.replay import ReplayResult

__all__ = ["plot_replay"]

#: below this many points the curves get markers, so a short replay is not an empty plot
_MARKERS_BELOW = 40


def plot_replay(result: ReplayResult, path: Path, title: str, target: float) -> None:
    """Confidence and accuracy against judgments, as Figures 2-3 of [U12]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [t.judgments for t in result.trajectory]
    marker = "o" if len(xs) < _MARKERS_BELOW else None
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    ax.plot(
        xs,
        [t.ranking_confidence for t in result.trajectory],
        label="ranking confidence",
        color="#1f77b4",
        marker=marker,
    )
    ax.plot(
        xs,
        [t.sign_accuracy for t in result.trajectory],
        label="sign accuracy",
        color="#d62728",
        alpha=0.8,
        marker=marker,
    )
    ax.axhline(target, color="grey", ls="--", lw=0.8, label=f"target {target:.2f}")
    ax.axvline(result.judgments_to_target, color="grey", ls=":", lw=0.8)
    if result.judgments_to_target == 0:
        ax.set_xlim(-1, 10)
        ax.annotate(
            "stopped before any judgment:\nthe estimates alone reached the target",
            xy=(0, result.initial_confidence),
            xytext=(1.0, 0.75),
            fontsize=8,
            arrowprops={"arrowstyle": "->", "color": "grey"},
        )
    ax.set_xlabel("judgments")
    ax.set_ylabel("proportion")
    ax.set_ylim(0.45, 1.01)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
