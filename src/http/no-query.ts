// The query schema of a GET that takes no parameters (one token, account or catalog entry,
// the catalog document, the scope list): an unknown parameter is refused with the same
// 400 INVALID_QUERY as on the lists, whose query schemas are closed too, rather than
// ignored on one kind of read and refused on the other.
import { Type } from 'typebox';

export const NoQuery = Type.Object({}, { additionalProperties: false });
