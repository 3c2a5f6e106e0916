"""What the scene scripts with one figure share: saving it and saying where it went."""

import os


def save_figure(fig, out, name):
    """Lay out ``fig``, save it as ``name`` in the folder ``out`` (110 dpi), close it, and print
    its path (the last lines a scene script prints). Returns 0, the script's exit status."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote:")
    print("  " + os.path.abspath(path))
    return 0
