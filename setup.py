"""What the wheel holds is derived from the tree, never listed: every package under memstore/, and the
top-level migrations/ folder (where alembic.ini points) shipped inside it as memstore.migrations.
Data files (templates, styles, py.typed, Alembic's script template) come from MANIFEST.in's grafts.
The rest of the metadata is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

# Alembic's folder sits at the top of the checkout for `alembic` run by hand; installed, memstore
# finds it inside the package (memstore.migrate.migrations_dir).
MIGRATIONS = "migrations"

setup(
    # Folders of data files (templates, static) are packages too, as setuptools treats them.
    packages=find_namespace_packages(include=["memstore", "memstore.*"], exclude=["*.__pycache__"])
    + [f"memstore.{package}" for package in find_namespace_packages(include=[MIGRATIONS, f"{MIGRATIONS}.*"], exclude=["*.__pycache__"])],
    package_dir={"memstore.migrations": MIGRATIONS},
    include_package_data=True,
)
