// Removes dist/ before a build, so a file deleted from src/ leaves no stale output behind.
import { rmSync } from "node:fs";

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
