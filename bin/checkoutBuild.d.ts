// Types of bin/checkoutBuild.js, for the TypeScript that imports it (the build and the tests).
export declare const BUILD_STAMP: string;
export declare function compiledIsCurrent(root: string): boolean;
export declare function fileSystemNow(dir: string): number;
export declare function writeBuildStamp(root: string, startedAt: number): void;
