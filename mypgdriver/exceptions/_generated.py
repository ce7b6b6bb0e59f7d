# GENERATED FILE, do not edit.
# Made by tools/gen_errcodes.py from PostgreSQL's errcodes.txt
# (plus the newer codes listed in the script).  To regenerate:
#     python tools/gen_errcodes.py [path/to/errcodes.txt]
#
# Class names equal asyncpg's for the same SQLSTATE (checked while
# generating).  Differences from asyncpg:
#   none in class names or bases (the generator fails on any), except that the
#   root of each SQLSTATE class also derives from its PEP 249 class (pep249.py).
#   Not generated, as in asyncpg: 00000 successful_completion, which is not a
#   condition; a notice carrying it becomes a plain PostgresLogMessage.
"""Exception classes for every SQLSTATE, generated from errcodes.txt."""

from __future__ import annotations

from . import pep249 as _pep249
from ._base import PostgresError, PostgresLogMessage


# Class 01 - Warning
class PostgresWarning(PostgresLogMessage, Warning):
    """SQLSTATE 01000: warning."""

    sqlstate = '01000'


class DynamicResultSetsReturned(PostgresWarning):
    """SQLSTATE 0100C: dynamic_result_sets_returned."""

    sqlstate = '0100C'


class ImplicitZeroBitPadding(PostgresWarning):
    """SQLSTATE 01008: implicit_zero_bit_padding."""

    sqlstate = '01008'


class NullValueEliminatedInSetFunction(PostgresWarning):
    """SQLSTATE 01003: null_value_eliminated_in_set_function."""

    sqlstate = '01003'


class PrivilegeNotGranted(PostgresWarning):
    """SQLSTATE 01007: privilege_not_granted."""

    sqlstate = '01007'


class PrivilegeNotRevoked(PostgresWarning):
    """SQLSTATE 01006: privilege_not_revoked."""

    sqlstate = '01006'


class StringDataRightTruncation(PostgresWarning):
    """SQLSTATE 01004: string_data_right_truncation."""

    sqlstate = '01004'


class DeprecatedFeature(PostgresWarning):
    """SQLSTATE 01P01: deprecated_feature."""

    sqlstate = '01P01'


# Class 02 - No Data (this is also a warning class per the SQL standard)
class NoData(PostgresWarning):
    """SQLSTATE 02000: no_data."""

    sqlstate = '02000'


class NoAdditionalDynamicResultSetsReturned(NoData):
    """SQLSTATE 02001: no_additional_dynamic_result_sets_returned."""

    sqlstate = '02001'


# Class 03 - SQL Statement Not Yet Complete
class SQLStatementNotYetCompleteError(PostgresError):
    """SQLSTATE 03000: sql_statement_not_yet_complete."""

    sqlstate = '03000'


# Class 08 - Connection Exception
class PostgresConnectionError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 08000: connection_exception."""

    sqlstate = '08000'


class ConnectionDoesNotExistError(PostgresConnectionError):
    """SQLSTATE 08003: connection_does_not_exist."""

    sqlstate = '08003'


class ConnectionFailureError(PostgresConnectionError):
    """SQLSTATE 08006: connection_failure."""

    sqlstate = '08006'


class ClientCannotConnectError(PostgresConnectionError):
    """SQLSTATE 08001: sqlclient_unable_to_establish_sqlconnection."""

    sqlstate = '08001'


class ConnectionRejectionError(PostgresConnectionError):
    """SQLSTATE 08004: sqlserver_rejected_establishment_of_sqlconnection."""

    sqlstate = '08004'


class TransactionResolutionUnknownError(PostgresConnectionError):
    """SQLSTATE 08007: transaction_resolution_unknown."""

    sqlstate = '08007'


class ProtocolViolationError(PostgresConnectionError):
    """SQLSTATE 08P01: protocol_violation."""

    sqlstate = '08P01'


# Class 09 - Triggered Action Exception
class TriggeredActionError(PostgresError):
    """SQLSTATE 09000: triggered_action_exception."""

    sqlstate = '09000'


# Class 0A - Feature Not Supported
class FeatureNotSupportedError(PostgresError, _pep249.NotSupportedError):
    """SQLSTATE 0A000: feature_not_supported."""

    sqlstate = '0A000'


# Class 0B - Invalid Transaction Initiation
class InvalidTransactionInitiationError(PostgresError):
    """SQLSTATE 0B000: invalid_transaction_initiation."""

    sqlstate = '0B000'


# Class 0F - Locator Exception
class LocatorError(PostgresError):
    """SQLSTATE 0F000: locator_exception."""

    sqlstate = '0F000'


class InvalidLocatorSpecificationError(LocatorError):
    """SQLSTATE 0F001: invalid_locator_specification."""

    sqlstate = '0F001'


# Class 0L - Invalid Grantor
class InvalidGrantorError(PostgresError):
    """SQLSTATE 0L000: invalid_grantor."""

    sqlstate = '0L000'


class InvalidGrantOperationError(InvalidGrantorError):
    """SQLSTATE 0LP01: invalid_grant_operation."""

    sqlstate = '0LP01'


# Class 0P - Invalid Role Specification
class InvalidRoleSpecificationError(PostgresError):
    """SQLSTATE 0P000: invalid_role_specification."""

    sqlstate = '0P000'


# Class 0Z - Diagnostics Exception
class DiagnosticsError(PostgresError):
    """SQLSTATE 0Z000: diagnostics_exception."""

    sqlstate = '0Z000'


class StackedDiagnosticsAccessedWithoutActiveHandlerError(DiagnosticsError):
    """SQLSTATE 0Z002: stacked_diagnostics_accessed_without_active_handler."""

    sqlstate = '0Z002'


# Class 10 - XQuery Error
class InvalidArgumentForXqueryError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 10608: invalid_argument_for_xquery."""

    sqlstate = '10608'


# Class 20 - Case Not Found
class CaseNotFoundError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 20000: case_not_found."""

    sqlstate = '20000'


# Class 21 - Cardinality Violation
class CardinalityViolationError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 21000: cardinality_violation."""

    sqlstate = '21000'


# Class 22 - Data Exception
class DataError(PostgresError, _pep249.DataError):
    """SQLSTATE 22000: data_exception."""

    sqlstate = '22000'


class ArraySubscriptError(DataError):
    """SQLSTATE 2202E: array_subscript_error."""

    sqlstate = '2202E'


class CharacterNotInRepertoireError(DataError):
    """SQLSTATE 22021: character_not_in_repertoire."""

    sqlstate = '22021'


class DatetimeFieldOverflowError(DataError):
    """SQLSTATE 22008: datetime_field_overflow."""

    sqlstate = '22008'


class DivisionByZeroError(DataError):
    """SQLSTATE 22012: division_by_zero."""

    sqlstate = '22012'


class ErrorInAssignmentError(DataError):
    """SQLSTATE 22005: error_in_assignment."""

    sqlstate = '22005'


class EscapeCharacterConflictError(DataError):
    """SQLSTATE 2200B: escape_character_conflict."""

    sqlstate = '2200B'


class IndicatorOverflowError(DataError):
    """SQLSTATE 22022: indicator_overflow."""

    sqlstate = '22022'


class IntervalFieldOverflowError(DataError):
    """SQLSTATE 22015: interval_field_overflow."""

    sqlstate = '22015'


class InvalidArgumentForLogarithmError(DataError):
    """SQLSTATE 2201E: invalid_argument_for_logarithm."""

    sqlstate = '2201E'


class InvalidArgumentForNtileFunctionError(DataError):
    """SQLSTATE 22014: invalid_argument_for_ntile_function."""

    sqlstate = '22014'


class InvalidArgumentForNthValueFunctionError(DataError):
    """SQLSTATE 22016: invalid_argument_for_nth_value_function."""

    sqlstate = '22016'


class InvalidArgumentForPowerFunctionError(DataError):
    """SQLSTATE 2201F: invalid_argument_for_power_function."""

    sqlstate = '2201F'


class InvalidArgumentForWidthBucketFunctionError(DataError):
    """SQLSTATE 2201G: invalid_argument_for_width_bucket_function."""

    sqlstate = '2201G'


class InvalidCharacterValueForCastError(DataError):
    """SQLSTATE 22018: invalid_character_value_for_cast."""

    sqlstate = '22018'


class InvalidDatetimeFormatError(DataError):
    """SQLSTATE 22007: invalid_datetime_format."""

    sqlstate = '22007'


class InvalidEscapeCharacterError(DataError):
    """SQLSTATE 22019: invalid_escape_character."""

    sqlstate = '22019'


class InvalidEscapeOctetError(DataError):
    """SQLSTATE 2200D: invalid_escape_octet."""

    sqlstate = '2200D'


class InvalidEscapeSequenceError(DataError):
    """SQLSTATE 22025: invalid_escape_sequence."""

    sqlstate = '22025'


class NonstandardUseOfEscapeCharacterError(DataError):
    """SQLSTATE 22P06: nonstandard_use_of_escape_character."""

    sqlstate = '22P06'


class InvalidIndicatorParameterValueError(DataError):
    """SQLSTATE 22010: invalid_indicator_parameter_value."""

    sqlstate = '22010'


class InvalidParameterValueError(DataError):
    """SQLSTATE 22023: invalid_parameter_value."""

    sqlstate = '22023'


class InvalidPrecedingOrFollowingSizeError(DataError):
    """SQLSTATE 22013: invalid_preceding_or_following_size."""

    sqlstate = '22013'


class InvalidRegularExpressionError(DataError):
    """SQLSTATE 2201B: invalid_regular_expression."""

    sqlstate = '2201B'


class InvalidRowCountInLimitClauseError(DataError):
    """SQLSTATE 2201W: invalid_row_count_in_limit_clause."""

    sqlstate = '2201W'


class InvalidRowCountInResultOffsetClauseError(DataError):
    """SQLSTATE 2201X: invalid_row_count_in_result_offset_clause."""

    sqlstate = '2201X'


class InvalidTablesampleArgumentError(DataError):
    """SQLSTATE 2202H: invalid_tablesample_argument."""

    sqlstate = '2202H'


class InvalidTablesampleRepeatError(DataError):
    """SQLSTATE 2202G: invalid_tablesample_repeat."""

    sqlstate = '2202G'


class InvalidTimeZoneDisplacementValueError(DataError):
    """SQLSTATE 22009: invalid_time_zone_displacement_value."""

    sqlstate = '22009'


class InvalidUseOfEscapeCharacterError(DataError):
    """SQLSTATE 2200C: invalid_use_of_escape_character."""

    sqlstate = '2200C'


class MostSpecificTypeMismatchError(DataError):
    """SQLSTATE 2200G: most_specific_type_mismatch."""

    sqlstate = '2200G'


class NullValueNotAllowedError(DataError):
    """SQLSTATE 22004: null_value_not_allowed."""

    sqlstate = '22004'


class NullValueNoIndicatorParameterError(DataError):
    """SQLSTATE 22002: null_value_no_indicator_parameter."""

    sqlstate = '22002'


class NumericValueOutOfRangeError(DataError):
    """SQLSTATE 22003: numeric_value_out_of_range."""

    sqlstate = '22003'


class SequenceGeneratorLimitExceededError(DataError):
    """SQLSTATE 2200H: sequence_generator_limit_exceeded."""

    sqlstate = '2200H'


class StringDataLengthMismatchError(DataError):
    """SQLSTATE 22026: string_data_length_mismatch."""

    sqlstate = '22026'


class StringDataRightTruncationError(DataError):
    """SQLSTATE 22001: string_data_right_truncation."""

    sqlstate = '22001'


class SubstringError(DataError):
    """SQLSTATE 22011: substring_error."""

    sqlstate = '22011'


class TrimError(DataError):
    """SQLSTATE 22027: trim_error."""

    sqlstate = '22027'


class UnterminatedCStringError(DataError):
    """SQLSTATE 22024: unterminated_c_string."""

    sqlstate = '22024'


class ZeroLengthCharacterStringError(DataError):
    """SQLSTATE 2200F: zero_length_character_string."""

    sqlstate = '2200F'


class PostgresFloatingPointError(DataError):
    """SQLSTATE 22P01: floating_point_exception."""

    sqlstate = '22P01'


class InvalidTextRepresentationError(DataError):
    """SQLSTATE 22P02: invalid_text_representation."""

    sqlstate = '22P02'


class InvalidBinaryRepresentationError(DataError):
    """SQLSTATE 22P03: invalid_binary_representation."""

    sqlstate = '22P03'


class BadCopyFileFormatError(DataError):
    """SQLSTATE 22P04: bad_copy_file_format."""

    sqlstate = '22P04'


class UntranslatableCharacterError(DataError):
    """SQLSTATE 22P05: untranslatable_character."""

    sqlstate = '22P05'


class NotAnXmlDocumentError(DataError):
    """SQLSTATE 2200L: not_an_xml_document."""

    sqlstate = '2200L'


class InvalidXmlDocumentError(DataError):
    """SQLSTATE 2200M: invalid_xml_document."""

    sqlstate = '2200M'


class InvalidXmlContentError(DataError):
    """SQLSTATE 2200N: invalid_xml_content."""

    sqlstate = '2200N'


class InvalidXmlCommentError(DataError):
    """SQLSTATE 2200S: invalid_xml_comment."""

    sqlstate = '2200S'


class InvalidXmlProcessingInstructionError(DataError):
    """SQLSTATE 2200T: invalid_xml_processing_instruction."""

    sqlstate = '2200T'


class DuplicateJsonObjectKeyValueError(DataError):
    """SQLSTATE 22030: duplicate_json_object_key_value."""

    sqlstate = '22030'


class InvalidArgumentForSQLJsonDatetimeFunctionError(DataError):
    """SQLSTATE 22031: invalid_argument_for_sql_json_datetime_function."""

    sqlstate = '22031'


class InvalidJsonTextError(DataError):
    """SQLSTATE 22032: invalid_json_text."""

    sqlstate = '22032'


class InvalidSQLJsonSubscriptError(DataError):
    """SQLSTATE 22033: invalid_sql_json_subscript."""

    sqlstate = '22033'


class MoreThanOneSQLJsonItemError(DataError):
    """SQLSTATE 22034: more_than_one_sql_json_item."""

    sqlstate = '22034'


class NoSQLJsonItemError(DataError):
    """SQLSTATE 22035: no_sql_json_item."""

    sqlstate = '22035'


class NonNumericSQLJsonItemError(DataError):
    """SQLSTATE 22036: non_numeric_sql_json_item."""

    sqlstate = '22036'


class NonUniqueKeysInAJsonObjectError(DataError):
    """SQLSTATE 22037: non_unique_keys_in_a_json_object."""

    sqlstate = '22037'


class SingletonSQLJsonItemRequiredError(DataError):
    """SQLSTATE 22038: singleton_sql_json_item_required."""

    sqlstate = '22038'


class SQLJsonArrayNotFoundError(DataError):
    """SQLSTATE 22039: sql_json_array_not_found."""

    sqlstate = '22039'


class SQLJsonMemberNotFoundError(DataError):
    """SQLSTATE 2203A: sql_json_member_not_found."""

    sqlstate = '2203A'


class SQLJsonNumberNotFoundError(DataError):
    """SQLSTATE 2203B: sql_json_number_not_found."""

    sqlstate = '2203B'


class SQLJsonObjectNotFoundError(DataError):
    """SQLSTATE 2203C: sql_json_object_not_found."""

    sqlstate = '2203C'


class TooManyJsonArrayElementsError(DataError):
    """SQLSTATE 2203D: too_many_json_array_elements."""

    sqlstate = '2203D'


class TooManyJsonObjectMembersError(DataError):
    """SQLSTATE 2203E: too_many_json_object_members."""

    sqlstate = '2203E'


class SQLJsonScalarRequiredError(DataError):
    """SQLSTATE 2203F: sql_json_scalar_required."""

    sqlstate = '2203F'


class SQLJsonItemCannotBeCastToTargetTypeError(DataError):
    """SQLSTATE 2203G: sql_json_item_cannot_be_cast_to_target_type."""

    sqlstate = '2203G'


# Class 23 - Integrity Constraint Violation
class IntegrityConstraintViolationError(PostgresError, _pep249.IntegrityError):
    """SQLSTATE 23000: integrity_constraint_violation."""

    sqlstate = '23000'


class RestrictViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23001: restrict_violation."""

    sqlstate = '23001'


class NotNullViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23502: not_null_violation."""

    sqlstate = '23502'


class ForeignKeyViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23503: foreign_key_violation."""

    sqlstate = '23503'


class UniqueViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23505: unique_violation."""

    sqlstate = '23505'


class CheckViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23514: check_violation."""

    sqlstate = '23514'


class ExclusionViolationError(IntegrityConstraintViolationError):
    """SQLSTATE 23P01: exclusion_violation."""

    sqlstate = '23P01'


# Class 24 - Invalid Cursor State
class InvalidCursorStateError(PostgresError, _pep249.InternalError):
    """SQLSTATE 24000: invalid_cursor_state."""

    sqlstate = '24000'


# Class 25 - Invalid Transaction State
class InvalidTransactionStateError(PostgresError, _pep249.InternalError):
    """SQLSTATE 25000: invalid_transaction_state."""

    sqlstate = '25000'


class ActiveSQLTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25001: active_sql_transaction."""

    sqlstate = '25001'


class BranchTransactionAlreadyActiveError(InvalidTransactionStateError):
    """SQLSTATE 25002: branch_transaction_already_active."""

    sqlstate = '25002'


class HeldCursorRequiresSameIsolationLevelError(InvalidTransactionStateError):
    """SQLSTATE 25008: held_cursor_requires_same_isolation_level."""

    sqlstate = '25008'


class InappropriateAccessModeForBranchTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25003: inappropriate_access_mode_for_branch_transaction."""

    sqlstate = '25003'


class InappropriateIsolationLevelForBranchTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25004: inappropriate_isolation_level_for_branch_transaction."""

    sqlstate = '25004'


class NoActiveSQLTransactionForBranchTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25005: no_active_sql_transaction_for_branch_transaction."""

    sqlstate = '25005'


class ReadOnlySQLTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25006: read_only_sql_transaction."""

    sqlstate = '25006'


class SchemaAndDataStatementMixingNotSupportedError(InvalidTransactionStateError):
    """SQLSTATE 25007: schema_and_data_statement_mixing_not_supported."""

    sqlstate = '25007'


class NoActiveSQLTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25P01: no_active_sql_transaction."""

    sqlstate = '25P01'


class InFailedSQLTransactionError(InvalidTransactionStateError):
    """SQLSTATE 25P02: in_failed_sql_transaction."""

    sqlstate = '25P02'


class IdleInTransactionSessionTimeoutError(InvalidTransactionStateError):
    """SQLSTATE 25P03: idle_in_transaction_session_timeout."""

    sqlstate = '25P03'


class TransactionTimeoutError(InvalidTransactionStateError):
    """SQLSTATE 25P04: transaction_timeout."""

    sqlstate = '25P04'


# Class 26 - Invalid SQL Statement Name
class InvalidSQLStatementNameError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 26000: invalid_sql_statement_name."""

    sqlstate = '26000'


# Class 27 - Triggered Data Change Violation
class TriggeredDataChangeViolationError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 27000: triggered_data_change_violation."""

    sqlstate = '27000'


# Class 28 - Invalid Authorization Specification
class InvalidAuthorizationSpecificationError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 28000: invalid_authorization_specification."""

    sqlstate = '28000'


class InvalidPasswordError(InvalidAuthorizationSpecificationError):
    """SQLSTATE 28P01: invalid_password."""

    sqlstate = '28P01'


# Class 2B - Dependent Privilege Descriptors Still Exist
class DependentPrivilegeDescriptorsStillExistError(PostgresError, _pep249.InternalError):
    """SQLSTATE 2B000: dependent_privilege_descriptors_still_exist."""

    sqlstate = '2B000'


class DependentObjectsStillExistError(DependentPrivilegeDescriptorsStillExistError):
    """SQLSTATE 2BP01: dependent_objects_still_exist."""

    sqlstate = '2BP01'


# Class 2D - Invalid Transaction Termination
class InvalidTransactionTerminationError(PostgresError, _pep249.InternalError):
    """SQLSTATE 2D000: invalid_transaction_termination."""

    sqlstate = '2D000'


# Class 2F - SQL Routine Exception
class SQLRoutineError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 2F000: sql_routine_exception."""

    sqlstate = '2F000'


class FunctionExecutedNoReturnStatementError(SQLRoutineError):
    """SQLSTATE 2F005: function_executed_no_return_statement."""

    sqlstate = '2F005'


class ModifyingSQLDataNotPermittedError(SQLRoutineError):
    """SQLSTATE 2F002: modifying_sql_data_not_permitted."""

    sqlstate = '2F002'


class ProhibitedSQLStatementAttemptedError(SQLRoutineError):
    """SQLSTATE 2F003: prohibited_sql_statement_attempted."""

    sqlstate = '2F003'


class ReadingSQLDataNotPermittedError(SQLRoutineError):
    """SQLSTATE 2F004: reading_sql_data_not_permitted."""

    sqlstate = '2F004'


# Class 34 - Invalid Cursor Name
class InvalidCursorNameError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 34000: invalid_cursor_name."""

    sqlstate = '34000'


# Class 38 - External Routine Exception
class ExternalRoutineError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 38000: external_routine_exception."""

    sqlstate = '38000'


class ContainingSQLNotPermittedError(ExternalRoutineError):
    """SQLSTATE 38001: containing_sql_not_permitted."""

    sqlstate = '38001'


class ModifyingExternalRoutineSQLDataNotPermittedError(ExternalRoutineError):
    """SQLSTATE 38002: modifying_sql_data_not_permitted."""

    sqlstate = '38002'


class ProhibitedExternalRoutineSQLStatementAttemptedError(ExternalRoutineError):
    """SQLSTATE 38003: prohibited_sql_statement_attempted."""

    sqlstate = '38003'


class ReadingExternalRoutineSQLDataNotPermittedError(ExternalRoutineError):
    """SQLSTATE 38004: reading_sql_data_not_permitted."""

    sqlstate = '38004'


# Class 39 - External Routine Invocation Exception
class ExternalRoutineInvocationError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 39000: external_routine_invocation_exception."""

    sqlstate = '39000'


class InvalidSqlstateReturnedError(ExternalRoutineInvocationError):
    """SQLSTATE 39001: invalid_sqlstate_returned."""

    sqlstate = '39001'


class NullValueInExternalRoutineNotAllowedError(ExternalRoutineInvocationError):
    """SQLSTATE 39004: null_value_not_allowed."""

    sqlstate = '39004'


class TriggerProtocolViolatedError(ExternalRoutineInvocationError):
    """SQLSTATE 39P01: trigger_protocol_violated."""

    sqlstate = '39P01'


class SrfProtocolViolatedError(ExternalRoutineInvocationError):
    """SQLSTATE 39P02: srf_protocol_violated."""

    sqlstate = '39P02'


class EventTriggerProtocolViolatedError(ExternalRoutineInvocationError):
    """SQLSTATE 39P03: event_trigger_protocol_violated."""

    sqlstate = '39P03'


# Class 3B - Savepoint Exception
class SavepointError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 3B000: savepoint_exception."""

    sqlstate = '3B000'


class InvalidSavepointSpecificationError(SavepointError):
    """SQLSTATE 3B001: invalid_savepoint_specification."""

    sqlstate = '3B001'


# Class 3D - Invalid Catalog Name
class InvalidCatalogNameError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 3D000: invalid_catalog_name."""

    sqlstate = '3D000'


# Class 3F - Invalid Schema Name
class InvalidSchemaNameError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 3F000: invalid_schema_name."""

    sqlstate = '3F000'


# Class 40 - Transaction Rollback
class TransactionRollbackError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 40000: transaction_rollback."""

    sqlstate = '40000'


class TransactionIntegrityConstraintViolationError(TransactionRollbackError):
    """SQLSTATE 40002: transaction_integrity_constraint_violation."""

    sqlstate = '40002'


class SerializationError(TransactionRollbackError):
    """SQLSTATE 40001: serialization_failure."""

    sqlstate = '40001'


class StatementCompletionUnknownError(TransactionRollbackError):
    """SQLSTATE 40003: statement_completion_unknown."""

    sqlstate = '40003'


class DeadlockDetectedError(TransactionRollbackError):
    """SQLSTATE 40P01: deadlock_detected."""

    sqlstate = '40P01'


# Class 42 - Syntax Error or Access Rule Violation
class SyntaxOrAccessError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 42000: syntax_error_or_access_rule_violation."""

    sqlstate = '42000'


class PostgresSyntaxError(SyntaxOrAccessError):
    """SQLSTATE 42601: syntax_error."""

    sqlstate = '42601'


class InsufficientPrivilegeError(SyntaxOrAccessError):
    """SQLSTATE 42501: insufficient_privilege."""

    sqlstate = '42501'


class CannotCoerceError(SyntaxOrAccessError):
    """SQLSTATE 42846: cannot_coerce."""

    sqlstate = '42846'


class GroupingError(SyntaxOrAccessError):
    """SQLSTATE 42803: grouping_error."""

    sqlstate = '42803'


class WindowingError(SyntaxOrAccessError):
    """SQLSTATE 42P20: windowing_error."""

    sqlstate = '42P20'


class InvalidRecursionError(SyntaxOrAccessError):
    """SQLSTATE 42P19: invalid_recursion."""

    sqlstate = '42P19'


class InvalidForeignKeyError(SyntaxOrAccessError):
    """SQLSTATE 42830: invalid_foreign_key."""

    sqlstate = '42830'


class InvalidNameError(SyntaxOrAccessError):
    """SQLSTATE 42602: invalid_name."""

    sqlstate = '42602'


class NameTooLongError(SyntaxOrAccessError):
    """SQLSTATE 42622: name_too_long."""

    sqlstate = '42622'


class ReservedNameError(SyntaxOrAccessError):
    """SQLSTATE 42939: reserved_name."""

    sqlstate = '42939'


class DatatypeMismatchError(SyntaxOrAccessError):
    """SQLSTATE 42804: datatype_mismatch."""

    sqlstate = '42804'


class IndeterminateDatatypeError(SyntaxOrAccessError):
    """SQLSTATE 42P18: indeterminate_datatype."""

    sqlstate = '42P18'


class CollationMismatchError(SyntaxOrAccessError):
    """SQLSTATE 42P21: collation_mismatch."""

    sqlstate = '42P21'


class IndeterminateCollationError(SyntaxOrAccessError):
    """SQLSTATE 42P22: indeterminate_collation."""

    sqlstate = '42P22'


class WrongObjectTypeError(SyntaxOrAccessError):
    """SQLSTATE 42809: wrong_object_type."""

    sqlstate = '42809'


class GeneratedAlwaysError(SyntaxOrAccessError):
    """SQLSTATE 428C9: generated_always."""

    sqlstate = '428C9'


class UndefinedColumnError(SyntaxOrAccessError):
    """SQLSTATE 42703: undefined_column."""

    sqlstate = '42703'


class UndefinedFunctionError(SyntaxOrAccessError):
    """SQLSTATE 42883: undefined_function."""

    sqlstate = '42883'


class UndefinedTableError(SyntaxOrAccessError):
    """SQLSTATE 42P01: undefined_table."""

    sqlstate = '42P01'


class UndefinedParameterError(SyntaxOrAccessError):
    """SQLSTATE 42P02: undefined_parameter."""

    sqlstate = '42P02'


class UndefinedObjectError(SyntaxOrAccessError):
    """SQLSTATE 42704: undefined_object."""

    sqlstate = '42704'


class DuplicateColumnError(SyntaxOrAccessError):
    """SQLSTATE 42701: duplicate_column."""

    sqlstate = '42701'


class DuplicateCursorError(SyntaxOrAccessError):
    """SQLSTATE 42P03: duplicate_cursor."""

    sqlstate = '42P03'


class DuplicateDatabaseError(SyntaxOrAccessError):
    """SQLSTATE 42P04: duplicate_database."""

    sqlstate = '42P04'


class DuplicateFunctionError(SyntaxOrAccessError):
    """SQLSTATE 42723: duplicate_function."""

    sqlstate = '42723'


class DuplicatePreparedStatementError(SyntaxOrAccessError):
    """SQLSTATE 42P05: duplicate_prepared_statement."""

    sqlstate = '42P05'


class DuplicateSchemaError(SyntaxOrAccessError):
    """SQLSTATE 42P06: duplicate_schema."""

    sqlstate = '42P06'


class DuplicateTableError(SyntaxOrAccessError):
    """SQLSTATE 42P07: duplicate_table."""

    sqlstate = '42P07'


class DuplicateAliasError(SyntaxOrAccessError):
    """SQLSTATE 42712: duplicate_alias."""

    sqlstate = '42712'


class DuplicateObjectError(SyntaxOrAccessError):
    """SQLSTATE 42710: duplicate_object."""

    sqlstate = '42710'


class AmbiguousColumnError(SyntaxOrAccessError):
    """SQLSTATE 42702: ambiguous_column."""

    sqlstate = '42702'


class AmbiguousFunctionError(SyntaxOrAccessError):
    """SQLSTATE 42725: ambiguous_function."""

    sqlstate = '42725'


class AmbiguousParameterError(SyntaxOrAccessError):
    """SQLSTATE 42P08: ambiguous_parameter."""

    sqlstate = '42P08'


class AmbiguousAliasError(SyntaxOrAccessError):
    """SQLSTATE 42P09: ambiguous_alias."""

    sqlstate = '42P09'


class InvalidColumnReferenceError(SyntaxOrAccessError):
    """SQLSTATE 42P10: invalid_column_reference."""

    sqlstate = '42P10'


class InvalidColumnDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42611: invalid_column_definition."""

    sqlstate = '42611'


class InvalidCursorDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P11: invalid_cursor_definition."""

    sqlstate = '42P11'


class InvalidDatabaseDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P12: invalid_database_definition."""

    sqlstate = '42P12'


class InvalidFunctionDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P13: invalid_function_definition."""

    sqlstate = '42P13'


class InvalidPreparedStatementDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P14: invalid_prepared_statement_definition."""

    sqlstate = '42P14'


class InvalidSchemaDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P15: invalid_schema_definition."""

    sqlstate = '42P15'


class InvalidTableDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P16: invalid_table_definition."""

    sqlstate = '42P16'


class InvalidObjectDefinitionError(SyntaxOrAccessError):
    """SQLSTATE 42P17: invalid_object_definition."""

    sqlstate = '42P17'


# Class 44 - WITH CHECK OPTION Violation
class WithCheckOptionViolationError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE 44000: with_check_option_violation."""

    sqlstate = '44000'


# Class 53 - Insufficient Resources
class InsufficientResourcesError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 53000: insufficient_resources."""

    sqlstate = '53000'


class DiskFullError(InsufficientResourcesError):
    """SQLSTATE 53100: disk_full."""

    sqlstate = '53100'


class OutOfMemoryError(InsufficientResourcesError):
    """SQLSTATE 53200: out_of_memory."""

    sqlstate = '53200'


class TooManyConnectionsError(InsufficientResourcesError):
    """SQLSTATE 53300: too_many_connections."""

    sqlstate = '53300'


class ConfigurationLimitExceededError(InsufficientResourcesError):
    """SQLSTATE 53400: configuration_limit_exceeded."""

    sqlstate = '53400'


# Class 54 - Program Limit Exceeded
class ProgramLimitExceededError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 54000: program_limit_exceeded."""

    sqlstate = '54000'


class StatementTooComplexError(ProgramLimitExceededError):
    """SQLSTATE 54001: statement_too_complex."""

    sqlstate = '54001'


class TooManyColumnsError(ProgramLimitExceededError):
    """SQLSTATE 54011: too_many_columns."""

    sqlstate = '54011'


class TooManyArgumentsError(ProgramLimitExceededError):
    """SQLSTATE 54023: too_many_arguments."""

    sqlstate = '54023'


# Class 55 - Object Not In Prerequisite State
class ObjectNotInPrerequisiteStateError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 55000: object_not_in_prerequisite_state."""

    sqlstate = '55000'


class ObjectInUseError(ObjectNotInPrerequisiteStateError):
    """SQLSTATE 55006: object_in_use."""

    sqlstate = '55006'


class CantChangeRuntimeParamError(ObjectNotInPrerequisiteStateError):
    """SQLSTATE 55P02: cant_change_runtime_param."""

    sqlstate = '55P02'


class LockNotAvailableError(ObjectNotInPrerequisiteStateError):
    """SQLSTATE 55P03: lock_not_available."""

    sqlstate = '55P03'


class UnsafeNewEnumValueUsageError(ObjectNotInPrerequisiteStateError):
    """SQLSTATE 55P04: unsafe_new_enum_value_usage."""

    sqlstate = '55P04'


# Class 57 - Operator Intervention
class OperatorInterventionError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 57000: operator_intervention."""

    sqlstate = '57000'


class QueryCanceledError(OperatorInterventionError):
    """SQLSTATE 57014: query_canceled."""

    sqlstate = '57014'


class AdminShutdownError(OperatorInterventionError):
    """SQLSTATE 57P01: admin_shutdown."""

    sqlstate = '57P01'


class CrashShutdownError(OperatorInterventionError):
    """SQLSTATE 57P02: crash_shutdown."""

    sqlstate = '57P02'


class CannotConnectNowError(OperatorInterventionError):
    """SQLSTATE 57P03: cannot_connect_now."""

    sqlstate = '57P03'


class DatabaseDroppedError(OperatorInterventionError):
    """SQLSTATE 57P04: database_dropped."""

    sqlstate = '57P04'


class IdleSessionTimeoutError(OperatorInterventionError):
    """SQLSTATE 57P05: idle_session_timeout."""

    sqlstate = '57P05'


# Class 58 - System Error (errors external to PostgreSQL itself)
class PostgresSystemError(PostgresError, _pep249.OperationalError):
    """SQLSTATE 58000: system_error."""

    sqlstate = '58000'


class PostgresIOError(PostgresSystemError):
    """SQLSTATE 58030: io_error."""

    sqlstate = '58030'


class UndefinedFileError(PostgresSystemError):
    """SQLSTATE 58P01: undefined_file."""

    sqlstate = '58P01'


class DuplicateFileError(PostgresSystemError):
    """SQLSTATE 58P02: duplicate_file."""

    sqlstate = '58P02'


class FileNameTooLongError(PostgresSystemError):
    """SQLSTATE 58P03: file_name_too_long."""

    sqlstate = '58P03'


# Class 72 - Snapshot Failure
class SnapshotTooOldError(PostgresError):
    """SQLSTATE 72000: snapshot_too_old."""

    sqlstate = '72000'


# Class F0 - Configuration File Error
class ConfigFileError(PostgresError, _pep249.OperationalError):
    """SQLSTATE F0000: config_file_error."""

    sqlstate = 'F0000'


class LockFileExistsError(ConfigFileError):
    """SQLSTATE F0001: lock_file_exists."""

    sqlstate = 'F0001'


# Class HV - Foreign Data Wrapper Error (SQL/MED)
class FDWError(PostgresError, _pep249.OperationalError):
    """SQLSTATE HV000: fdw_error."""

    sqlstate = 'HV000'


class FDWColumnNameNotFoundError(FDWError):
    """SQLSTATE HV005: fdw_column_name_not_found."""

    sqlstate = 'HV005'


class FDWDynamicParameterValueNeededError(FDWError):
    """SQLSTATE HV002: fdw_dynamic_parameter_value_needed."""

    sqlstate = 'HV002'


class FDWFunctionSequenceError(FDWError):
    """SQLSTATE HV010: fdw_function_sequence_error."""

    sqlstate = 'HV010'


class FDWInconsistentDescriptorInformationError(FDWError):
    """SQLSTATE HV021: fdw_inconsistent_descriptor_information."""

    sqlstate = 'HV021'


class FDWInvalidAttributeValueError(FDWError):
    """SQLSTATE HV024: fdw_invalid_attribute_value."""

    sqlstate = 'HV024'


class FDWInvalidColumnNameError(FDWError):
    """SQLSTATE HV007: fdw_invalid_column_name."""

    sqlstate = 'HV007'


class FDWInvalidColumnNumberError(FDWError):
    """SQLSTATE HV008: fdw_invalid_column_number."""

    sqlstate = 'HV008'


class FDWInvalidDataTypeError(FDWError):
    """SQLSTATE HV004: fdw_invalid_data_type."""

    sqlstate = 'HV004'


class FDWInvalidDataTypeDescriptorsError(FDWError):
    """SQLSTATE HV006: fdw_invalid_data_type_descriptors."""

    sqlstate = 'HV006'


class FDWInvalidDescriptorFieldIdentifierError(FDWError):
    """SQLSTATE HV091: fdw_invalid_descriptor_field_identifier."""

    sqlstate = 'HV091'


class FDWInvalidHandleError(FDWError):
    """SQLSTATE HV00B: fdw_invalid_handle."""

    sqlstate = 'HV00B'


class FDWInvalidOptionIndexError(FDWError):
    """SQLSTATE HV00C: fdw_invalid_option_index."""

    sqlstate = 'HV00C'


class FDWInvalidOptionNameError(FDWError):
    """SQLSTATE HV00D: fdw_invalid_option_name."""

    sqlstate = 'HV00D'


class FDWInvalidStringLengthOrBufferLengthError(FDWError):
    """SQLSTATE HV090: fdw_invalid_string_length_or_buffer_length."""

    sqlstate = 'HV090'


class FDWInvalidStringFormatError(FDWError):
    """SQLSTATE HV00A: fdw_invalid_string_format."""

    sqlstate = 'HV00A'


class FDWInvalidUseOfNullPointerError(FDWError):
    """SQLSTATE HV009: fdw_invalid_use_of_null_pointer."""

    sqlstate = 'HV009'


class FDWTooManyHandlesError(FDWError):
    """SQLSTATE HV014: fdw_too_many_handles."""

    sqlstate = 'HV014'


class FDWOutOfMemoryError(FDWError):
    """SQLSTATE HV001: fdw_out_of_memory."""

    sqlstate = 'HV001'


class FDWNoSchemasError(FDWError):
    """SQLSTATE HV00P: fdw_no_schemas."""

    sqlstate = 'HV00P'


class FDWOptionNameNotFoundError(FDWError):
    """SQLSTATE HV00J: fdw_option_name_not_found."""

    sqlstate = 'HV00J'


class FDWReplyHandleError(FDWError):
    """SQLSTATE HV00K: fdw_reply_handle."""

    sqlstate = 'HV00K'


class FDWSchemaNotFoundError(FDWError):
    """SQLSTATE HV00Q: fdw_schema_not_found."""

    sqlstate = 'HV00Q'


class FDWTableNotFoundError(FDWError):
    """SQLSTATE HV00R: fdw_table_not_found."""

    sqlstate = 'HV00R'


class FDWUnableToCreateExecutionError(FDWError):
    """SQLSTATE HV00L: fdw_unable_to_create_execution."""

    sqlstate = 'HV00L'


class FDWUnableToCreateReplyError(FDWError):
    """SQLSTATE HV00M: fdw_unable_to_create_reply."""

    sqlstate = 'HV00M'


class FDWUnableToEstablishConnectionError(FDWError):
    """SQLSTATE HV00N: fdw_unable_to_establish_connection."""

    sqlstate = 'HV00N'


# Class P0 - PL/pgSQL Error
class PLPGSQLError(PostgresError, _pep249.ProgrammingError):
    """SQLSTATE P0000: plpgsql_error."""

    sqlstate = 'P0000'


class RaiseError(PLPGSQLError):
    """SQLSTATE P0001: raise_exception."""

    sqlstate = 'P0001'


class NoDataFoundError(PLPGSQLError):
    """SQLSTATE P0002: no_data_found."""

    sqlstate = 'P0002'


class TooManyRowsError(PLPGSQLError):
    """SQLSTATE P0003: too_many_rows."""

    sqlstate = 'P0003'


class AssertError(PLPGSQLError):
    """SQLSTATE P0004: assert_failure."""

    sqlstate = 'P0004'


# Class XX - Internal Error
class InternalServerError(PostgresError, _pep249.InternalError):
    """SQLSTATE XX000: internal_error."""

    sqlstate = 'XX000'


class DataCorruptedError(InternalServerError):
    """SQLSTATE XX001: data_corrupted."""

    sqlstate = 'XX001'


class IndexCorruptedError(InternalServerError):
    """SQLSTATE XX002: index_corrupted."""

    sqlstate = 'XX002'


# SQLSTATE -> class, for the factories in __init__.py.
ERROR_CLASSES: dict[str, type[PostgresError]] = {
    '03000': SQLStatementNotYetCompleteError,
    '08000': PostgresConnectionError,
    '08003': ConnectionDoesNotExistError,
    '08006': ConnectionFailureError,
    '08001': ClientCannotConnectError,
    '08004': ConnectionRejectionError,
    '08007': TransactionResolutionUnknownError,
    '08P01': ProtocolViolationError,
    '09000': TriggeredActionError,
    '0A000': FeatureNotSupportedError,
    '0B000': InvalidTransactionInitiationError,
    '0F000': LocatorError,
    '0F001': InvalidLocatorSpecificationError,
    '0L000': InvalidGrantorError,
    '0LP01': InvalidGrantOperationError,
    '0P000': InvalidRoleSpecificationError,
    '0Z000': DiagnosticsError,
    '0Z002': StackedDiagnosticsAccessedWithoutActiveHandlerError,
    '10608': InvalidArgumentForXqueryError,
    '20000': CaseNotFoundError,
    '21000': CardinalityViolationError,
    '22000': DataError,
    '2202E': ArraySubscriptError,
    '22021': CharacterNotInRepertoireError,
    '22008': DatetimeFieldOverflowError,
    '22012': DivisionByZeroError,
    '22005': ErrorInAssignmentError,
    '2200B': EscapeCharacterConflictError,
    '22022': IndicatorOverflowError,
    '22015': IntervalFieldOverflowError,
    '2201E': InvalidArgumentForLogarithmError,
    '22014': InvalidArgumentForNtileFunctionError,
    '22016': InvalidArgumentForNthValueFunctionError,
    '2201F': InvalidArgumentForPowerFunctionError,
    '2201G': InvalidArgumentForWidthBucketFunctionError,
    '22018': InvalidCharacterValueForCastError,
    '22007': InvalidDatetimeFormatError,
    '22019': InvalidEscapeCharacterError,
    '2200D': InvalidEscapeOctetError,
    '22025': InvalidEscapeSequenceError,
    '22P06': NonstandardUseOfEscapeCharacterError,
    '22010': InvalidIndicatorParameterValueError,
    '22023': InvalidParameterValueError,
    '22013': InvalidPrecedingOrFollowingSizeError,
    '2201B': InvalidRegularExpressionError,
    '2201W': InvalidRowCountInLimitClauseError,
    '2201X': InvalidRowCountInResultOffsetClauseError,
    '2202H': InvalidTablesampleArgumentError,
    '2202G': InvalidTablesampleRepeatError,
    '22009': InvalidTimeZoneDisplacementValueError,
    '2200C': InvalidUseOfEscapeCharacterError,
    '2200G': MostSpecificTypeMismatchError,
    '22004': NullValueNotAllowedError,
    '22002': NullValueNoIndicatorParameterError,
    '22003': NumericValueOutOfRangeError,
    '2200H': SequenceGeneratorLimitExceededError,
    '22026': StringDataLengthMismatchError,
    '22001': StringDataRightTruncationError,
    '22011': SubstringError,
    '22027': TrimError,
    '22024': UnterminatedCStringError,
    '2200F': ZeroLengthCharacterStringError,
    '22P01': PostgresFloatingPointError,
    '22P02': InvalidTextRepresentationError,
    '22P03': InvalidBinaryRepresentationError,
    '22P04': BadCopyFileFormatError,
    '22P05': UntranslatableCharacterError,
    '2200L': NotAnXmlDocumentError,
    '2200M': InvalidXmlDocumentError,
    '2200N': InvalidXmlContentError,
    '2200S': InvalidXmlCommentError,
    '2200T': InvalidXmlProcessingInstructionError,
    '22030': DuplicateJsonObjectKeyValueError,
    '22031': InvalidArgumentForSQLJsonDatetimeFunctionError,
    '22032': InvalidJsonTextError,
    '22033': InvalidSQLJsonSubscriptError,
    '22034': MoreThanOneSQLJsonItemError,
    '22035': NoSQLJsonItemError,
    '22036': NonNumericSQLJsonItemError,
    '22037': NonUniqueKeysInAJsonObjectError,
    '22038': SingletonSQLJsonItemRequiredError,
    '22039': SQLJsonArrayNotFoundError,
    '2203A': SQLJsonMemberNotFoundError,
    '2203B': SQLJsonNumberNotFoundError,
    '2203C': SQLJsonObjectNotFoundError,
    '2203D': TooManyJsonArrayElementsError,
    '2203E': TooManyJsonObjectMembersError,
    '2203F': SQLJsonScalarRequiredError,
    '2203G': SQLJsonItemCannotBeCastToTargetTypeError,
    '23000': IntegrityConstraintViolationError,
    '23001': RestrictViolationError,
    '23502': NotNullViolationError,
    '23503': ForeignKeyViolationError,
    '23505': UniqueViolationError,
    '23514': CheckViolationError,
    '23P01': ExclusionViolationError,
    '24000': InvalidCursorStateError,
    '25000': InvalidTransactionStateError,
    '25001': ActiveSQLTransactionError,
    '25002': BranchTransactionAlreadyActiveError,
    '25008': HeldCursorRequiresSameIsolationLevelError,
    '25003': InappropriateAccessModeForBranchTransactionError,
    '25004': InappropriateIsolationLevelForBranchTransactionError,
    '25005': NoActiveSQLTransactionForBranchTransactionError,
    '25006': ReadOnlySQLTransactionError,
    '25007': SchemaAndDataStatementMixingNotSupportedError,
    '25P01': NoActiveSQLTransactionError,
    '25P02': InFailedSQLTransactionError,
    '25P03': IdleInTransactionSessionTimeoutError,
    '25P04': TransactionTimeoutError,
    '26000': InvalidSQLStatementNameError,
    '27000': TriggeredDataChangeViolationError,
    '28000': InvalidAuthorizationSpecificationError,
    '28P01': InvalidPasswordError,
    '2B000': DependentPrivilegeDescriptorsStillExistError,
    '2BP01': DependentObjectsStillExistError,
    '2D000': InvalidTransactionTerminationError,
    '2F000': SQLRoutineError,
    '2F005': FunctionExecutedNoReturnStatementError,
    '2F002': ModifyingSQLDataNotPermittedError,
    '2F003': ProhibitedSQLStatementAttemptedError,
    '2F004': ReadingSQLDataNotPermittedError,
    '34000': InvalidCursorNameError,
    '38000': ExternalRoutineError,
    '38001': ContainingSQLNotPermittedError,
    '38002': ModifyingExternalRoutineSQLDataNotPermittedError,
    '38003': ProhibitedExternalRoutineSQLStatementAttemptedError,
    '38004': ReadingExternalRoutineSQLDataNotPermittedError,
    '39000': ExternalRoutineInvocationError,
    '39001': InvalidSqlstateReturnedError,
    '39004': NullValueInExternalRoutineNotAllowedError,
    '39P01': TriggerProtocolViolatedError,
    '39P02': SrfProtocolViolatedError,
    '39P03': EventTriggerProtocolViolatedError,
    '3B000': SavepointError,
    '3B001': InvalidSavepointSpecificationError,
    '3D000': InvalidCatalogNameError,
    '3F000': InvalidSchemaNameError,
    '40000': TransactionRollbackError,
    '40002': TransactionIntegrityConstraintViolationError,
    '40001': SerializationError,
    '40003': StatementCompletionUnknownError,
    '40P01': DeadlockDetectedError,
    '42000': SyntaxOrAccessError,
    '42601': PostgresSyntaxError,
    '42501': InsufficientPrivilegeError,
    '42846': CannotCoerceError,
    '42803': GroupingError,
    '42P20': WindowingError,
    '42P19': InvalidRecursionError,
    '42830': InvalidForeignKeyError,
    '42602': InvalidNameError,
    '42622': NameTooLongError,
    '42939': ReservedNameError,
    '42804': DatatypeMismatchError,
    '42P18': IndeterminateDatatypeError,
    '42P21': CollationMismatchError,
    '42P22': IndeterminateCollationError,
    '42809': WrongObjectTypeError,
    '428C9': GeneratedAlwaysError,
    '42703': UndefinedColumnError,
    '42883': UndefinedFunctionError,
    '42P01': UndefinedTableError,
    '42P02': UndefinedParameterError,
    '42704': UndefinedObjectError,
    '42701': DuplicateColumnError,
    '42P03': DuplicateCursorError,
    '42P04': DuplicateDatabaseError,
    '42723': DuplicateFunctionError,
    '42P05': DuplicatePreparedStatementError,
    '42P06': DuplicateSchemaError,
    '42P07': DuplicateTableError,
    '42712': DuplicateAliasError,
    '42710': DuplicateObjectError,
    '42702': AmbiguousColumnError,
    '42725': AmbiguousFunctionError,
    '42P08': AmbiguousParameterError,
    '42P09': AmbiguousAliasError,
    '42P10': InvalidColumnReferenceError,
    '42611': InvalidColumnDefinitionError,
    '42P11': InvalidCursorDefinitionError,
    '42P12': InvalidDatabaseDefinitionError,
    '42P13': InvalidFunctionDefinitionError,
    '42P14': InvalidPreparedStatementDefinitionError,
    '42P15': InvalidSchemaDefinitionError,
    '42P16': InvalidTableDefinitionError,
    '42P17': InvalidObjectDefinitionError,
    '44000': WithCheckOptionViolationError,
    '53000': InsufficientResourcesError,
    '53100': DiskFullError,
    '53200': OutOfMemoryError,
    '53300': TooManyConnectionsError,
    '53400': ConfigurationLimitExceededError,
    '54000': ProgramLimitExceededError,
    '54001': StatementTooComplexError,
    '54011': TooManyColumnsError,
    '54023': TooManyArgumentsError,
    '55000': ObjectNotInPrerequisiteStateError,
    '55006': ObjectInUseError,
    '55P02': CantChangeRuntimeParamError,
    '55P03': LockNotAvailableError,
    '55P04': UnsafeNewEnumValueUsageError,
    '57000': OperatorInterventionError,
    '57014': QueryCanceledError,
    '57P01': AdminShutdownError,
    '57P02': CrashShutdownError,
    '57P03': CannotConnectNowError,
    '57P04': DatabaseDroppedError,
    '57P05': IdleSessionTimeoutError,
    '58000': PostgresSystemError,
    '58030': PostgresIOError,
    '58P01': UndefinedFileError,
    '58P02': DuplicateFileError,
    '58P03': FileNameTooLongError,
    '72000': SnapshotTooOldError,
    'F0000': ConfigFileError,
    'F0001': LockFileExistsError,
    'HV000': FDWError,
    'HV005': FDWColumnNameNotFoundError,
    'HV002': FDWDynamicParameterValueNeededError,
    'HV010': FDWFunctionSequenceError,
    'HV021': FDWInconsistentDescriptorInformationError,
    'HV024': FDWInvalidAttributeValueError,
    'HV007': FDWInvalidColumnNameError,
    'HV008': FDWInvalidColumnNumberError,
    'HV004': FDWInvalidDataTypeError,
    'HV006': FDWInvalidDataTypeDescriptorsError,
    'HV091': FDWInvalidDescriptorFieldIdentifierError,
    'HV00B': FDWInvalidHandleError,
    'HV00C': FDWInvalidOptionIndexError,
    'HV00D': FDWInvalidOptionNameError,
    'HV090': FDWInvalidStringLengthOrBufferLengthError,
    'HV00A': FDWInvalidStringFormatError,
    'HV009': FDWInvalidUseOfNullPointerError,
    'HV014': FDWTooManyHandlesError,
    'HV001': FDWOutOfMemoryError,
    'HV00P': FDWNoSchemasError,
    'HV00J': FDWOptionNameNotFoundError,
    'HV00K': FDWReplyHandleError,
    'HV00Q': FDWSchemaNotFoundError,
    'HV00R': FDWTableNotFoundError,
    'HV00L': FDWUnableToCreateExecutionError,
    'HV00M': FDWUnableToCreateReplyError,
    'HV00N': FDWUnableToEstablishConnectionError,
    'P0000': PLPGSQLError,
    'P0001': RaiseError,
    'P0002': NoDataFoundError,
    'P0003': TooManyRowsError,
    'P0004': AssertError,
    'XX000': InternalServerError,
    'XX001': DataCorruptedError,
    'XX002': IndexCorruptedError,
}

WARNING_CLASSES: dict[str, type[PostgresLogMessage]] = {
    '01000': PostgresWarning,
    '0100C': DynamicResultSetsReturned,
    '01008': ImplicitZeroBitPadding,
    '01003': NullValueEliminatedInSetFunction,
    '01007': PrivilegeNotGranted,
    '01006': PrivilegeNotRevoked,
    '01004': StringDataRightTruncation,
    '01P01': DeprecatedFeature,
    '02000': NoData,
    '02001': NoAdditionalDynamicResultSetsReturned,
}

__all__ = [
    'ActiveSQLTransactionError',
    'AdminShutdownError',
    'AmbiguousAliasError',
    'AmbiguousColumnError',
    'AmbiguousFunctionError',
    'AmbiguousParameterError',
    'ArraySubscriptError',
    'AssertError',
    'BadCopyFileFormatError',
    'BranchTransactionAlreadyActiveError',
    'CannotCoerceError',
    'CannotConnectNowError',
    'CantChangeRuntimeParamError',
    'CardinalityViolationError',
    'CaseNotFoundError',
    'CharacterNotInRepertoireError',
    'CheckViolationError',
    'ClientCannotConnectError',
    'CollationMismatchError',
    'ConfigFileError',
    'ConfigurationLimitExceededError',
    'ConnectionDoesNotExistError',
    'ConnectionFailureError',
    'ConnectionRejectionError',
    'ContainingSQLNotPermittedError',
    'CrashShutdownError',
    'DataCorruptedError',
    'DataError',
    'DatabaseDroppedError',
    'DatatypeMismatchError',
    'DatetimeFieldOverflowError',
    'DeadlockDetectedError',
    'DependentObjectsStillExistError',
    'DependentPrivilegeDescriptorsStillExistError',
    'DeprecatedFeature',
    'DiagnosticsError',
    'DiskFullError',
    'DivisionByZeroError',
    'DuplicateAliasError',
    'DuplicateColumnError',
    'DuplicateCursorError',
    'DuplicateDatabaseError',
    'DuplicateFileError',
    'DuplicateFunctionError',
    'DuplicateJsonObjectKeyValueError',
    'DuplicateObjectError',
    'DuplicatePreparedStatementError',
    'DuplicateSchemaError',
    'DuplicateTableError',
    'DynamicResultSetsReturned',
    'ErrorInAssignmentError',
    'EscapeCharacterConflictError',
    'EventTriggerProtocolViolatedError',
    'ExclusionViolationError',
    'ExternalRoutineError',
    'ExternalRoutineInvocationError',
    'FDWColumnNameNotFoundError',
    'FDWDynamicParameterValueNeededError',
    'FDWError',
    'FDWFunctionSequenceError',
    'FDWInconsistentDescriptorInformationError',
    'FDWInvalidAttributeValueError',
    'FDWInvalidColumnNameError',
    'FDWInvalidColumnNumberError',
    'FDWInvalidDataTypeDescriptorsError',
    'FDWInvalidDataTypeError',
    'FDWInvalidDescriptorFieldIdentifierError',
    'FDWInvalidHandleError',
    'FDWInvalidOptionIndexError',
    'FDWInvalidOptionNameError',
    'FDWInvalidStringFormatError',
    'FDWInvalidStringLengthOrBufferLengthError',
    'FDWInvalidUseOfNullPointerError',
    'FDWNoSchemasError',
    'FDWOptionNameNotFoundError',
    'FDWOutOfMemoryError',
    'FDWReplyHandleError',
    'FDWSchemaNotFoundError',
    'FDWTableNotFoundError',
    'FDWTooManyHandlesError',
    'FDWUnableToCreateExecutionError',
    'FDWUnableToCreateReplyError',
    'FDWUnableToEstablishConnectionError',
    'FeatureNotSupportedError',
    'FileNameTooLongError',
    'ForeignKeyViolationError',
    'FunctionExecutedNoReturnStatementError',
    'GeneratedAlwaysError',
    'GroupingError',
    'HeldCursorRequiresSameIsolationLevelError',
    'IdleInTransactionSessionTimeoutError',
    'IdleSessionTimeoutError',
    'ImplicitZeroBitPadding',
    'InFailedSQLTransactionError',
    'InappropriateAccessModeForBranchTransactionError',
    'InappropriateIsolationLevelForBranchTransactionError',
    'IndeterminateCollationError',
    'IndeterminateDatatypeError',
    'IndexCorruptedError',
    'IndicatorOverflowError',
    'InsufficientPrivilegeError',
    'InsufficientResourcesError',
    'IntegrityConstraintViolationError',
    'InternalServerError',
    'IntervalFieldOverflowError',
    'InvalidArgumentForLogarithmError',
    'InvalidArgumentForNthValueFunctionError',
    'InvalidArgumentForNtileFunctionError',
    'InvalidArgumentForPowerFunctionError',
    'InvalidArgumentForSQLJsonDatetimeFunctionError',
    'InvalidArgumentForWidthBucketFunctionError',
    'InvalidArgumentForXqueryError',
    'InvalidAuthorizationSpecificationError',
    'InvalidBinaryRepresentationError',
    'InvalidCatalogNameError',
    'InvalidCharacterValueForCastError',
    'InvalidColumnDefinitionError',
    'InvalidColumnReferenceError',
    'InvalidCursorDefinitionError',
    'InvalidCursorNameError',
    'InvalidCursorStateError',
    'InvalidDatabaseDefinitionError',
    'InvalidDatetimeFormatError',
    'InvalidEscapeCharacterError',
    'InvalidEscapeOctetError',
    'InvalidEscapeSequenceError',
    'InvalidForeignKeyError',
    'InvalidFunctionDefinitionError',
    'InvalidGrantOperationError',
    'InvalidGrantorError',
    'InvalidIndicatorParameterValueError',
    'InvalidJsonTextError',
    'InvalidLocatorSpecificationError',
    'InvalidNameError',
    'InvalidObjectDefinitionError',
    'InvalidParameterValueError',
    'InvalidPasswordError',
    'InvalidPrecedingOrFollowingSizeError',
    'InvalidPreparedStatementDefinitionError',
    'InvalidRecursionError',
    'InvalidRegularExpressionError',
    'InvalidRoleSpecificationError',
    'InvalidRowCountInLimitClauseError',
    'InvalidRowCountInResultOffsetClauseError',
    'InvalidSQLJsonSubscriptError',
    'InvalidSQLStatementNameError',
    'InvalidSavepointSpecificationError',
    'InvalidSchemaDefinitionError',
    'InvalidSchemaNameError',
    'InvalidSqlstateReturnedError',
    'InvalidTableDefinitionError',
    'InvalidTablesampleArgumentError',
    'InvalidTablesampleRepeatError',
    'InvalidTextRepresentationError',
    'InvalidTimeZoneDisplacementValueError',
    'InvalidTransactionInitiationError',
    'InvalidTransactionStateError',
    'InvalidTransactionTerminationError',
    'InvalidUseOfEscapeCharacterError',
    'InvalidXmlCommentError',
    'InvalidXmlContentError',
    'InvalidXmlDocumentError',
    'InvalidXmlProcessingInstructionError',
    'LocatorError',
    'LockFileExistsError',
    'LockNotAvailableError',
    'ModifyingExternalRoutineSQLDataNotPermittedError',
    'ModifyingSQLDataNotPermittedError',
    'MoreThanOneSQLJsonItemError',
    'MostSpecificTypeMismatchError',
    'NameTooLongError',
    'NoActiveSQLTransactionError',
    'NoActiveSQLTransactionForBranchTransactionError',
    'NoAdditionalDynamicResultSetsReturned',
    'NoData',
    'NoDataFoundError',
    'NoSQLJsonItemError',
    'NonNumericSQLJsonItemError',
    'NonUniqueKeysInAJsonObjectError',
    'NonstandardUseOfEscapeCharacterError',
    'NotAnXmlDocumentError',
    'NotNullViolationError',
    'NullValueEliminatedInSetFunction',
    'NullValueInExternalRoutineNotAllowedError',
    'NullValueNoIndicatorParameterError',
    'NullValueNotAllowedError',
    'NumericValueOutOfRangeError',
    'ObjectInUseError',
    'ObjectNotInPrerequisiteStateError',
    'OperatorInterventionError',
    'OutOfMemoryError',
    'PLPGSQLError',
    'PostgresConnectionError',
    'PostgresFloatingPointError',
    'PostgresIOError',
    'PostgresSyntaxError',
    'PostgresSystemError',
    'PostgresWarning',
    'PrivilegeNotGranted',
    'PrivilegeNotRevoked',
    'ProgramLimitExceededError',
    'ProhibitedExternalRoutineSQLStatementAttemptedError',
    'ProhibitedSQLStatementAttemptedError',
    'ProtocolViolationError',
    'QueryCanceledError',
    'RaiseError',
    'ReadOnlySQLTransactionError',
    'ReadingExternalRoutineSQLDataNotPermittedError',
    'ReadingSQLDataNotPermittedError',
    'ReservedNameError',
    'RestrictViolationError',
    'SQLJsonArrayNotFoundError',
    'SQLJsonItemCannotBeCastToTargetTypeError',
    'SQLJsonMemberNotFoundError',
    'SQLJsonNumberNotFoundError',
    'SQLJsonObjectNotFoundError',
    'SQLJsonScalarRequiredError',
    'SQLRoutineError',
    'SQLStatementNotYetCompleteError',
    'SavepointError',
    'SchemaAndDataStatementMixingNotSupportedError',
    'SequenceGeneratorLimitExceededError',
    'SerializationError',
    'SingletonSQLJsonItemRequiredError',
    'SnapshotTooOldError',
    'SrfProtocolViolatedError',
    'StackedDiagnosticsAccessedWithoutActiveHandlerError',
    'StatementCompletionUnknownError',
    'StatementTooComplexError',
    'StringDataLengthMismatchError',
    'StringDataRightTruncation',
    'StringDataRightTruncationError',
    'SubstringError',
    'SyntaxOrAccessError',
    'TooManyArgumentsError',
    'TooManyColumnsError',
    'TooManyConnectionsError',
    'TooManyJsonArrayElementsError',
    'TooManyJsonObjectMembersError',
    'TooManyRowsError',
    'TransactionIntegrityConstraintViolationError',
    'TransactionResolutionUnknownError',
    'TransactionRollbackError',
    'TransactionTimeoutError',
    'TriggerProtocolViolatedError',
    'TriggeredActionError',
    'TriggeredDataChangeViolationError',
    'TrimError',
    'UndefinedColumnError',
    'UndefinedFileError',
    'UndefinedFunctionError',
    'UndefinedObjectError',
    'UndefinedParameterError',
    'UndefinedTableError',
    'UniqueViolationError',
    'UnsafeNewEnumValueUsageError',
    'UnterminatedCStringError',
    'UntranslatableCharacterError',
    'WindowingError',
    'WithCheckOptionViolationError',
    'WrongObjectTypeError',
    'ZeroLengthCharacterStringError',
]
