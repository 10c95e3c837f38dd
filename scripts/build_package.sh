#!/bin/sh
# The npm package's contents under lib/ (`npm run build:package`; `npm pack` runs it first):
# - lib/*.js: the ES modules, from one Vite library build (vite.package.config.ts says why Vite
#   and what it inlines);
# - lib/walk-in/: the walk-in loaders (Deno's and the join page's), which import nothing and are
#   the same for every run: `buildWalkIn` of the installed package reads them from there;
# - lib/types/: the declarations, from tsc over the same entries (tsconfig.package.json), the
#   checked-JS dashboard modules' from their JSDoc.
# The sources import each other with `.ts` extensions, which tsc keeps in the declarations;
# a consumer's TypeScript resolves `./x.js` to `./x.d.ts`, so they are rewritten to `.js`.
set -eu
cd "$(dirname "$0")/.."
. scripts/env.sh
vite build --config vite.package.config.ts --logLevel warn
deno eval --ext=ts 'import { buildWalkInLoaders } from "./src/walk_in_build.ts";
const { loader, page } = await buildWalkInLoaders();
Deno.mkdirSync("lib/walk-in", { recursive: true });
Deno.writeFileSync("lib/walk-in/loader.js", loader);
Deno.writeFileSync("lib/walk-in/page.js", page);'
rm -rf lib/types
tsc -p tsconfig.package.json
find lib/types -name '*.d.ts' -exec sed -i -E 's#((from|import)[[:space:]]*\(?[[:space:]]*")(\.\.?/[^"]*)\.ts"#\1\3.js"#g' {} +
echo "lib/: $(du -sh lib | cut -f1) ($(find lib -name '*.js' | wc -l) modules, $(find lib/types -name '*.d.ts' | wc -l) declaration files)"
