// Types of fastify-semver.cjs, for the test that imports it.
type Options = { includePrerelease?: boolean; loose?: boolean } | boolean | undefined;
declare const fastifySemver: {
  satisfies(version: string, range: string, options?: Options): boolean;
  gt(a: string, b: string, loose?: boolean): boolean;
  coerce(version: string, options?: Options): { version: string } | null;
};
export = fastifySemver;
