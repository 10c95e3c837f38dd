/**
 * The package's entries, declared once: the import specifier a user writes → its source
 * module. The library build (vite.package.config.ts), the API reference
 * (scripts/api_reference.ts) and its documentation lint read it; package.json `exports`
 * names the built files of the same subpaths.
 */
export const PACKAGE_ENTRIES = {
  "flodl-webgpu": "src/index.ts",
  "flodl-webgpu/zoo": "src/zoo/mod.ts",
  "flodl-webgpu/engine": "src/engine.ts",
  "flodl-webgpu/vite": "src/vite_plugin.ts",
} as const;

/** A specifier of {@link PACKAGE_ENTRIES}. */
export type PackageSpecifier = keyof typeof PACKAGE_ENTRIES;

/** The built file's name in `lib/` for a specifier: `index` for the package itself, else its subpath. */
export function builtName(specifier: PackageSpecifier): string {
  return specifier === "flodl-webgpu" ? "index" : specifier.slice("flodl-webgpu/".length);
}
