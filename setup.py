"""The built-in themes live in the top-level themes/ (the design card's layout), outside the package;
this copies them into the wheel as trialtui/themes/, package data that tui/themes.py reads there.
Everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithThemes(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "trialtui" / "themes"
        self.mkpath(str(target))
        for path in sorted(Path(__file__).parent.joinpath("themes").glob("*.toml")):
            self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildWithThemes})
