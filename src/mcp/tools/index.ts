import { operations } from '../../core/operations/index.js';
import { buildToolDefinitions } from './registry.js';

/** Every operation as an MCP tool, built once per process (schemas converted once). */
export const tools = buildToolDefinitions(operations);
