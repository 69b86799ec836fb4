// Marks dist/cjs as CommonJS: the package itself is "type": "module", so without this
// Node would load the CommonJS build's .js files as ES modules.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');
